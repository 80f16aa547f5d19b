import { Transform } from 'class-transformer';
import { IsInt, IsNotEmpty, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { HasNoNul } from '../../../common/validation/field-validators.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

/** In-app feedback widget. The owner comes from the principal, never from the body. */
export class CreateFeedbackDto {
  /** 1 to 5000 characters (surrounding whitespace ignored). */
  @Transform(trim)
  @IsString()
  @IsNotEmpty()
  @MaxLength(5000)
  @HasNoNul()
  message!: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(5)
  rating?: number;

  /** The page or screen the feedback was given on. */
  @IsOptional()
  @Transform(trim)
  @IsString()
  @MaxLength(500)
  @HasNoNul()
  page?: string;
}

export class FeedbackResponseDto {
  id!: string;
  message!: string;
  rating!: number | null;
  page!: string | null;
  created_at!: string;
}
