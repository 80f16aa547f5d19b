import { NestFactory } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import { loadConfig } from '../config/env.js';
import { ApiModule } from './api.module.js';
import { setApiPrefix } from './configure-app.js';
import { createOpenApiDocument } from './openapi.js';

/**
 * The OpenAPI document without a database or Redis: the application is created in preview mode, which
 * builds the module graph but instantiates no provider (so nothing connects). `npm run openapi` writes
 * it to openapi.json; test/openapi checks that the committed file matches.
 */
export async function generateOpenApiDocument(): Promise<OpenAPIObject> {
  const app = await NestFactory.create(ApiModule.forRoot(loadConfig({ APP_ENV: 'development' })), {
    preview: true,
    logger: false,
    abortOnError: false,
  });
  try {
    setApiPrefix(app);
    return await createOpenApiDocument(app);
  } finally {
    await app.close();
  }
}

/** The file's text: two-space JSON and a final newline (what prettier would keep). */
export const openApiText = (document: OpenAPIObject): string => `${JSON.stringify(document, null, 2)}\n`;
