import { ApiInt } from '../../../common/openapi/api-fields.js';
import { StrictPageQueryDto } from '../../../common/paging/page-query.dto.js';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';

export const SUPPRESSION_REASONS = ['bounce', 'complaint', 'manual'] as const;

export class ListSuppressionsQueryDto extends StrictPageQueryDto {
  @ApiPropertyOptional({ enum: SUPPRESSION_REASONS, example: 'bounce' })
  @IsOptional()
  @IsIn(SUPPRESSION_REASONS)
  reason?: (typeof SUPPRESSION_REASONS)[number];
}

export class SuppressionDto {
  @ApiProperty({
    format: 'uuid',
    example: '0b9d6c1e-3f0a-4c55-9d1e-6a2f3b7c8d90',
    description: 'The entry; its audit entries (email.suppressed, email.unsuppressed) name it as resource_id',
  })
  id!: string;

  @ApiProperty({ example: 'bounced@example.com', description: 'The suppressed address (lower-cased)' })
  email!: string;

  @ApiProperty({ enum: SUPPRESSION_REASONS, example: 'bounce' })
  reason!: string;

  @ApiProperty({ example: '2026-11-25T09:30:00.000Z', format: 'date-time' })
  created_at!: string;
}

export class SuppressionListDto {
  @ApiProperty({ type: [SuppressionDto] })
  items!: SuppressionDto[];

  @ApiInt({ example: 1 })
  total!: number;

  @ApiInt({ example: 1 })
  page!: number;

  @ApiInt({ example: 50 })
  page_size!: number;
}
