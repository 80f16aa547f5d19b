import { ValidationPipe, type ValidationError as ClassValidatorError } from '@nestjs/common';
import { type FieldError, ValidationError } from '../errors/app-error.js';

function flatten(errors: ClassValidatorError[], parent = ''): FieldError[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((message) => ({
      field,
      message: error.constraints?.whitelistValidation ? `property ${field} is not allowed` : message,
    }));
    return [...own, ...flatten(error.children ?? [], field)];
  });
}

/** Global DTO validation: unknown fields are refused, values transformed, errors as problem+json. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    stopAtFirstError: false,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => {
      const fields = flatten(errors);
      return new ValidationError(
        fields.length > 0 ? fields.map((f) => f.message).join('; ') : 'The request is invalid.',
        fields,
      );
    },
  });
}
