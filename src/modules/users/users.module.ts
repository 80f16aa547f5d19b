import { Module } from '@nestjs/common';
import { UserHooks } from './user-hooks.js';
import { UsersRepository } from './users.repository.js';
import { UsersService } from './users.service.js';

@Module({
  providers: [UsersService, UsersRepository, UserHooks],
  exports: [UsersService, UsersRepository, UserHooks],
})
export class UsersModule {}
