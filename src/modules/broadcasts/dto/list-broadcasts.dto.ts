import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

const MAX_PAGE = 1_000_000_000;

export class ListBroadcastsQueryDto {
  @ApiPropertyOptional({ type: 'integer', default: 1, minimum: 1, maximum: MAX_PAGE })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  // Beyond this the offset leaves the safe integers and the query fails (a 500): refused like page_size.
  @Max(MAX_PAGE)
  page?: number;

  @ApiPropertyOptional({ type: 'integer', default: 50, minimum: 1, maximum: 100 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  page_size?: number;
}
