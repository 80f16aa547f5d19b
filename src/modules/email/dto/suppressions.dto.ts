import { ApiInt } from '../../../common/openapi/api-fields.js';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';

const MAX_PAGE = 1_000_000_000;
export const SUPPRESSION_REASONS = ['bounce', 'complaint', 'manual'] as const;

export class ListSuppressionsQueryDto {
  @ApiPropertyOptional({ type: 'integer', default: 1, minimum: 1, maximum: MAX_PAGE, example: 1 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE)
  page?: number;

  @ApiPropertyOptional({ type: 'integer', default: 50, minimum: 1, maximum: 100, example: 50 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  page_size?: number;

  @ApiPropertyOptional({ enum: SUPPRESSION_REASONS, example: 'bounce' })
  @IsOptional()
  @IsIn(SUPPRESSION_REASONS)
  reason?: (typeof SUPPRESSION_REASONS)[number];
}

export class SuppressionDto {
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
