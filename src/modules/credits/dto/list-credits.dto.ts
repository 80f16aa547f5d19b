import { Transform } from 'class-transformer';
import { IsInt, IsOptional } from 'class-validator';
import { ApiInt } from '../../../common/openapi/api-fields.js';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

const wholeNumber = (value: unknown): number | null =>
  typeof value === 'string' && /^-?\d{1,9}$/.test(value.trim()) ? Number(value) : null;

/** Spec paging rules: invalid values are reset, never refused (page < 1 -> 1; bad page_size -> 50). */
export const normalisePage = (value: unknown): number => {
  const n = wholeNumber(value);
  return n === null || n < 1 ? 1 : n;
};

export const normalisePageSize = (value: unknown): number => {
  const n = wholeNumber(value);
  return n === null || n < 1 || n > MAX_PAGE_SIZE ? DEFAULT_PAGE_SIZE : n;
};

export class ListCreditsQueryDto {
  /** Page number, from 1 (values below 1 or not a number become 1). */
  @IsOptional()
  @Transform(({ value }) => normalisePage(value))
  @IsInt()
  @ApiInt({ minimum: 1, default: 1, required: false })
  page: number = 1;

  /** Rows per page, 1 to 200 (anything else becomes 50). */
  @IsOptional()
  @Transform(({ value }) => normalisePageSize(value))
  @IsInt()
  @ApiInt({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE, required: false })
  page_size: number = DEFAULT_PAGE_SIZE;
}
