import { Module } from '@nestjs/common';
import { AdminDirectoryController } from './admin-directory.controller.js';
import { AdminDirectoryRepository } from './admin-directory.repository.js';
import { AdminDirectoryService } from './admin-directory.service.js';

/** Admin lists of users and audit entries (API process only). */
@Module({
  controllers: [AdminDirectoryController],
  providers: [AdminDirectoryService, AdminDirectoryRepository],
})
export class AdminDirectoryModule {}
