// The model stub of the tests (test/fakes/llm-server.ts, an OpenAI-compatible `POST /v1/chat/completions`
// answering at once with a completion and its usage) as its own process, so neither the API nor the load
// generator pays for the model's side. Node 24 runs the TypeScript file as it is (type stripping).
// Prints its base URL (`http://127.0.0.1:<port>/v1`) as the first line on stdout.
import { FakeLlmServer } from '../test/fakes/llm-server.ts';

const fake = await FakeLlmServer.start();
// The fake records every request for the tests' assertions: under load that list only grows.
setInterval(() => fake.requests.splice(0), 1000).unref();
process.stdout.write(`${fake.baseUrl}\n`);
process.on('SIGTERM', () => void fake.close().then(() => process.exit(0)));
