import { Module } from '@nestjs/common';
import { AccountDeletionService } from './account-deletion.service.js';
import { UserHooks } from './user-hooks.js';
import { UsersRepository } from './users.repository.js';
import { UsersService } from './users.service.js';

@Module({
  providers: [UsersService, UsersRepository, UserHooks, AccountDeletionService],
  exports: [UsersService, UsersRepository, UserHooks, AccountDeletionService],
})
export class UsersModule {}
