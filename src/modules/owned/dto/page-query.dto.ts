import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, Max, Min } from 'class-validator';
import {
  DEFAULT_PAGE,
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  normalisePage,
  normalisePageSize,
} from '../paging.js';

/**
 * Paging of an owned-resource list. Invalid values are normalised, never refused (spec, Limits), so the
 * validators below always pass; they document the range.
 */
export class PageQueryDto {
  /** 1-based page number; values below 1 or not a number become 1. */
  @ApiPropertyOptional({ type: 'integer', default: DEFAULT_PAGE, minimum: 1 })
  @Transform(({ value }) => normalisePage(value))
  @IsInt()
  @Min(1)
  page: number = DEFAULT_PAGE;

  /** Items per page, 1..200; values outside that range or not a number become 50. */
  @ApiPropertyOptional({ type: 'integer', default: DEFAULT_PAGE_SIZE, minimum: 1, maximum: MAX_PAGE_SIZE })
  @Transform(({ value }) => normalisePageSize(value))
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  page_size: number = DEFAULT_PAGE_SIZE;
}
