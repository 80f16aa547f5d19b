import { ApiProperty } from '@nestjs/swagger';

export class QueueDashboardLinkDto {
  @ApiProperty({
    description:
      'Open this URL in a browser within a minute: it signs the browser in to the queue dashboard (one use) and redirects to it.',
    example: 'http://localhost:3000/admin/queues/login?ticket=3q2-7wW1oU5mPZ0Zx8cX0hYq9f1m0pXo6wVbq3k4r2s',
  })
  url!: string;

  @ApiProperty({ format: 'date-time', description: 'When the link stops working' })
  expires_at!: string;
}
