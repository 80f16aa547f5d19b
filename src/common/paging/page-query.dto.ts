import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import {
  DEFAULT_PAGE,
  DEFAULT_PAGE_SIZE,
  MAX_PAGE,
  MAX_PAGE_SIZE,
  normalisePage,
  normalisePageSize,
} from './paging.js';

/** Admin lists answer at most this many rows per page unless a list says otherwise. */
export const MAX_ADMIN_PAGE_SIZE = 100;

/**
 * Paging of a user-facing list (owned resources, API keys, the credit history). Invalid values are
 * normalised, never refused (spec, Limits), so the validators below always pass; they document the range.
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

/**
 * Admin list paging. Unlike user-facing lists (where bad values reset), out-of-range values are rejected
 * by validation (spec Errors: "out-of-range page_size on admin list endpoints"). The page size is declared
 * by each list (`StrictPageQueryDto` here, or its own bound).
 */
export class StrictPageNumberQueryDto {
  /** 1-based page number, at most 1,000,000,000 (beyond, the offset would leave the safe integers). */
  @ApiPropertyOptional({ type: 'integer', default: DEFAULT_PAGE, minimum: 1, maximum: MAX_PAGE })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE)
  page?: number;
}

/** Admin list paging with the usual page size bound, 1..100 (default 50). */
export class StrictPageQueryDto extends StrictPageNumberQueryDto {
  /** Page size, 1..100 (default 50). */
  @ApiPropertyOptional({
    type: 'integer',
    default: DEFAULT_PAGE_SIZE,
    minimum: 1,
    maximum: MAX_ADMIN_PAGE_SIZE,
  })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_ADMIN_PAGE_SIZE)
  page_size?: number;
}
