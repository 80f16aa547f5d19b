// Prisma's WebAssembly schema engine, driven through @prisma/adapter-pg: planning, diffing and the
// _prisma_migrations bookkeeping without Prisma's native engine (it cannot be downloaded here).
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import * as wasmBindings from '@prisma/schema-engine-wasm/schema_engine_bg';
import { ROOT } from '../lib/env.mjs';
import { connectionConfig, quoteIdent, withServer } from './connection.mjs';

// Not in the lint config's list of globals.
const { WebAssembly } = globalThis;
const PG_CHAR_OID = 18;
const PG_TEXT_OID = 25;

let wasmReady;

// The package's default entry imports the .wasm file as an ES module, which Node cannot do without a
// flag; instantiate it by hand with the JS glue as its import object instead. Once per process: the
// glue module keeps the instance in a module-level variable.
export function loadEngine() {
  wasmReady ??= (async () => {
    // The glue reports Rust panics here before trapping; without it a panic becomes a TypeError.
    globalThis.PRISMA_WASM_PANIC_REGISTRY ??= {
      message: '',
      set_message(message) {
        this.message = `RuntimeError: ${message}`;
      },
    };
    const glueUrl = import.meta.resolve('@prisma/schema-engine-wasm/schema_engine_bg');
    const bytes = await readFile(new URL('schema_engine_bg.wasm', glueUrl));
    const imports = { ...wasmBindings };
    // The engine arms timers (e.g. a 10 s timeout) and never clears them; unref them so a finished
    // command does not keep the process alive for another 10 s. Pending database I/O still does.
    for (const [name, fn] of Object.entries(wasmBindings)) {
      if (name.startsWith('__wbg_setTimeout_')) {
        imports[name] = (...args) => {
          const timer = fn(...args);
          timer?.unref?.();
          return timer;
        };
      }
    }
    const { instance } = await WebAssembly.instantiate(bytes, { './schema_engine_bg.js': imports });
    wasmBindings.__wbg_set_wasm(instance.exports);
    instance.exports.__wbindgen_start();
    return wasmBindings.SchemaEngine;
  })();
  return wasmReady;
}

// Works around adapter-pg 7.10 behaviour that the schema engine trips over.
function patchAdapter(adapter) {
  const pool = adapter.underlyingDriver();
  // adapter-pg splits scripts on ';' (breaking $$ function bodies and string literals) and runs the
  // pieces one by one (a failed migration leaves half its statements applied). Sent as one simple
  // query, PostgreSQL runs the whole script in one implicit transaction, like Prisma's native engine.
  adapter.executeScript = async (script) => {
    try {
      await pool.query(script);
    } catch (error) {
      adapter.onError(error);
    }
  };
  // The engine's catalog queries return PostgreSQL "char" columns (pg_class.relkind,
  // pg_constraint.contype, ...), a type adapter-pg refuses as unsupported. Its values arrive as
  // plain strings already, so reporting the column as text is enough.
  const patchQueryable = (queryable) => {
    const performIO = queryable.performIO.bind(queryable);
    queryable.performIO = async (query) => {
      const result = await performIO(query);
      for (const field of result.fields) {
        if (field.dataTypeID === PG_CHAR_OID) field.dataTypeID = PG_TEXT_OID;
      }
      return result;
    };
    return queryable;
  };
  patchQueryable(adapter);
  const startTransaction = adapter.startTransaction.bind(adapter);
  adapter.startTransaction = async (...args) => patchQueryable(await startTransaction(...args));
  // Idempotent: the engine and our own cleanup may both dispose an adapter.
  const dispose = adapter.dispose.bind(adapter);
  let disposed;
  adapter.dispose = () => (disposed ??= dispose());
  return adapter;
}

// An adapter factory for the engine that connects to the main database with adapter-pg and manages
// shadow databases itself: adapter-pg's connectToShadowDb drops the database while its pool still
// holds connections (the DROP fails and the database leaks), and given a URL its "shadow" pool would
// connect to the main database (pg lets connectionString win over database).
function createAdapterFactory(databaseUrl, mainDatabase) {
  const { config, schema } = connectionConfig(databaseUrl);
  const mainConfig = mainDatabase ? { ...config, database: mainDatabase } : config;
  const adapters = new Set();
  const shadowDatabases = new Set();
  const pgOptions = schema ? { schema } : undefined;

  async function dropShadow(database) {
    await withServer(config, (client) =>
      client.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`),
    );
    shadowDatabases.delete(database);
  }

  const factory = {
    provider: 'postgres',
    adapterName: '@prisma/adapter-pg',
    async connect() {
      const adapter = patchAdapter(await new PrismaPg(mainConfig, pgOptions).connect());
      adapters.add(adapter);
      return adapter;
    },
    async connectToShadowDb() {
      const database = `prisma_shadow_${randomUUID().replaceAll('-', '')}`;
      await withServer(config, (client) => client.query(`CREATE DATABASE ${quoteIdent(database)}`));
      shadowDatabases.add(database);
      const adapter = patchAdapter(await new PrismaPg({ ...config, database }, pgOptions).connect());
      adapters.add(adapter);
      const dispose = adapter.dispose;
      let dropped;
      adapter.dispose = () =>
        (dropped ??= (async () => {
          await dispose();
          await dropShadow(database);
        })());
      return adapter;
    },
  };

  return {
    factory,
    // Closes every pool and drops every shadow database, whether or not the engine got that far.
    async close() {
      const results = await Promise.allSettled([...adapters].map((adapter) => adapter.dispose()));
      const drops = await Promise.allSettled([...shadowDatabases].map(dropShadow));
      const failure = [...drops, ...results].find((result) => result.status === 'rejected');
      if (shadowDatabases.size > 0) {
        throw new Error(`could not drop shadow database(s) ${[...shadowDatabases].join(', ')}`, {
          cause: failure?.reason,
        });
      }
      if (failure) throw failure.reason;
    },
  };
}

// Engine errors are plain objects or Errors with the message buried in various places.
function engineError(error) {
  if (error instanceof WebAssembly.RuntimeError) {
    return new Error(
      `schema engine crashed: ${globalThis.PRISMA_WASM_PANIC_REGISTRY?.message || error.message}`,
    );
  }
  if (error instanceof Error) {
    // Drop the engine's span trace ("   0: schema_engine_wasm::...") from the message.
    error.message = error.message.replace(/\n\s+0: [\s\S]*$/, '');
    return error;
  }
  const message = error?.message ?? error?.error ?? JSON.stringify(error);
  const wrapped = new Error(String(message));
  wrapped.cause = error;
  return wrapped;
}

// mainDatabase overrides the database the engine connects to (it always connects to one, even for
// work done entirely in a shadow database).
export async function withEngine({ databaseUrl, schemaPath }, fn, { mainDatabase } = {}) {
  const SchemaEngine = await loadEngine();
  const schema = await readSchema(schemaPath);
  const { factory, close } = createAdapterFactory(databaseUrl, mainDatabase);
  const engineLog = process.env.MIGRATE_DEBUG ? (line) => process.stderr.write(`${line}\n`) : () => {};
  let engine;
  let result;
  let failure;
  try {
    engine = await SchemaEngine.new(
      { datamodels: schema.files.map((file) => [file.path, file.content]) },
      engineLog,
      bindMigrationAwareSqlAdapterFactory(factory),
    );
    result = await fn(engine, schema);
  } catch (error) {
    failure = engineError(error);
  }
  engine?.free();
  try {
    await close();
  } catch (error) {
    // Report the engine's error first; a cleanup error after it is secondary.
    failure ??= error;
  }
  if (failure) throw failure;
  return result;
}

export async function readSchema(schemaPath) {
  return { files: [{ path: schemaPath, content: await readFile(schemaPath, 'utf8') }], configDir: ROOT };
}
