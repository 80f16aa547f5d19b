// `npm run openapi`: writes openapi.json (the API's OpenAPI 3.1 document) and the typed client's
// clients/typescript/src/schema.ts from the code, without a database or Redis (the Nest application is
// created in preview mode: modules and routes only, no provider instantiated). Commit both files; a test
// (test/openapi/openapi-document.spec.ts) fails while they differ from what the code produces.
// Run `node scripts/swagger-metadata.mjs` first when DTOs changed (`npm run openapi` does).
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { register } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

register('./ts-hooks.mjs', import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { generateOpenApiDocument, openApiText } = await import('../src/app/openapi-generate.ts');
const { clientSchemaText } = await import('./openapi-client.mjs');

const document = await generateOpenApiDocument();
writeFileSync(join(root, 'openapi.json'), openApiText(document));
writeFileSync(join(root, 'clients', 'typescript', 'src', 'schema.ts'), await clientSchemaText(document));
const operations = Object.values(document.paths).reduce((n, item) => n + Object.keys(item).length, 0);
console.log(`openapi.json: ${operations} operations; clients/typescript/src/schema.ts regenerated`);
process.exit(0);
