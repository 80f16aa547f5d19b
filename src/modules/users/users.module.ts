import { Module } from '@nestjs/common';
import { SignupHooks } from './signup-hooks.js';
import { UsersRepository } from './users.repository.js';
import { UsersService } from './users.service.js';

@Module({
  providers: [UsersService, UsersRepository, SignupHooks],
  exports: [UsersService, UsersRepository, SignupHooks],
})
export class UsersModule {}
