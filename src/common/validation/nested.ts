import { applyDecorators } from '@nestjs/common';
import { Type } from 'class-transformer';
import { IsObject, ValidateNested } from 'class-validator';

/**
 * A nested DTO (`each`: every element of an array of them), the one way a request DTO nests another.
 * ValidateNested alone passes an array where an object belongs: class-transformer maps a nested array
 * element by element and class-validator validates the inner items, so `{"messages":[[]]}` reached the
 * completions service as `[[]]` (a 500 in its token bound). IsObject refuses arrays, null and primitives
 * first, naming the field (`each value in messages must be an object`). `nested.spec.ts`
 * keeps ValidateNested out of the DTOs.
 */
export const NestedDto = (
  type: () => new () => object,
  options: { each?: boolean } = {},
): PropertyDecorator =>
  applyDecorators(
    IsObject({
      each: options.each,
      message: options.each ? 'each value in $property must be an object' : '$property must be an object',
    }),
    ValidateNested({ each: options.each }),
    Type(type),
  );
