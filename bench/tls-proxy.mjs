// The bench's TLS terminator in front of PostgreSQL, in a process of its own (see deployedDatabaseUrl in
// lib.mjs). Speaks the protocol's SSLRequest, then TLS with test/fakes/tls's self-signed certificate, and
// relays to the server. Prints its port on stdout once listening; exits with its parent.
import { readFileSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { dirname, join } from 'node:path';
import { TLSSocket } from 'node:tls';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const [host, port] = [process.argv[2] ?? '127.0.0.1', Number(process.argv[3] ?? 5432)];
const key = readFileSync(join(ROOT, 'test', 'fakes', 'tls', 'postgres-test.key'));
const cert = readFileSync(join(ROOT, 'test', 'fakes', 'tls', 'postgres-test.crt'));

// noDelay on both legs, as PostgreSQL and node-postgres set on theirs: with Nagle's algorithm a relayed
// small write waits for the peer's delayed ACK (up to 40 ms on Linux) behind the previous one.
const server = createServer({ noDelay: true }, (client) => {
  client.on('error', () => client.destroy());
  client.once('data', (head) => {
    if (head.length < 8 || head.readInt32BE(4) !== 80877103) return client.destroy();
    client.write('S');
    const tls = new TLSSocket(client, { isServer: true, key, cert });
    const upstream = tcpConnect({ port, host, noDelay: true });
    tls.on('error', () => upstream.destroy());
    upstream.on('error', () => tls.destroy());
    tls.on('close', () => upstream.destroy());
    upstream.on('close', () => tls.destroy());
    tls.pipe(upstream).pipe(tls);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
// The parent's end closes our stdin: the proxy never outlives the bench.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
process.stdin.resume();
