import { Module } from '@nestjs/common';
import { UsersModule } from '../../users/users.module.js';
import { QueueDashboardController } from './queue-dashboard.controller.js';
import { QueueDashboardSessions } from './queue-dashboard.sessions.js';

/**
 * The BullMQ dashboard (API process only): the sign-in link route here; the page itself is mounted by
 * configureApiApp (mountQueueDashboard) because it is an Express application, not Nest routes.
 */
@Module({
  imports: [UsersModule],
  controllers: [QueueDashboardController],
  providers: [QueueDashboardSessions],
})
export class QueueDashboardModule {}
