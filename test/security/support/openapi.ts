type Schema = {
  $ref?: string;
  type?: string;
  required?: string[];
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
};

export interface OpenApiDocument {
  paths: Record<
    string,
    Record<
      string,
      { responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>; security?: unknown[] }
    >
  >;
  components: { schemas: Record<string, Schema> };
}

/** `/api/v1/saved_searches/:id` -> `/api/v1/saved_searches/{id}` */
export const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');

/** The JSON schema documented for a route's answer with this status, if any. */
export function responseSchema(
  doc: OpenApiDocument,
  method: string,
  path: string,
  status: number,
): Schema | null {
  const operation = doc.paths[openApiPath(path)]?.[method];
  return operation?.responses?.[String(status)]?.content?.['application/json']?.schema ?? null;
}

function resolve(doc: OpenApiDocument, schema: Schema): Schema {
  if (schema.$ref) return resolve(doc, doc.components.schemas[schema.$ref.split('/').pop()!]);
  const parts = [...(schema.allOf ?? []), ...(schema.oneOf ?? []), ...(schema.anyOf ?? [])];
  if (parts.length === 0) return schema;
  const merged: Schema = { ...schema, properties: { ...(schema.properties ?? {}) } };
  for (const part of parts.map((p) => resolve(doc, p))) {
    Object.assign(merged.properties!, part.properties ?? {});
    if (schema.allOf && part.required) merged.required = [...(merged.required ?? []), ...part.required];
    merged.items ??= part.items;
    merged.additionalProperties ??= part.additionalProperties;
  }
  return merged;
}

/** Paths of values present in a response but not in its documented schema (excessive data exposure). */
export function undocumentedProperties(
  doc: OpenApiDocument,
  schema: Schema,
  value: unknown,
  at = '$',
): string[] {
  if (value === null || typeof value !== 'object') return [];
  const s = resolve(doc, schema);
  if (Array.isArray(value)) {
    return s.items
      ? value.flatMap((item, i) => undocumentedProperties(doc, s.items!, item, `${at}[${i}]`))
      : [];
  }
  const out: string[] = [];
  for (const [key, child] of Object.entries(value)) {
    const known = s.properties?.[key];
    if (known) out.push(...undocumentedProperties(doc, known, child, `${at}.${key}`));
    else if (typeof s.additionalProperties === 'object')
      out.push(...undocumentedProperties(doc, s.additionalProperties, child, `${at}.${key}`));
    else if (s.additionalProperties !== true) out.push(`${at}.${key}`);
  }
  return out;
}

/** Paths of properties a documented schema requires but a response lacks (the client would type them). */
export function missingProperties(doc: OpenApiDocument, schema: Schema, value: unknown, at = '$'): string[] {
  if (value === null || typeof value !== 'object') return [];
  const s = resolve(doc, schema);
  if (Array.isArray(value)) {
    return s.items ? value.flatMap((item, i) => missingProperties(doc, s.items!, item, `${at}[${i}]`)) : [];
  }
  const record = value as Record<string, unknown>;
  return [
    ...(s.required ?? []).filter((key) => !(key in record)).map((key) => `${at}.${key} (required)`),
    ...Object.entries(s.properties ?? {}).flatMap(([key, child]) =>
      key in record ? missingProperties(doc, child, record[key], `${at}.${key}`) : [],
    ),
  ];
}
