import type { PrismaService } from '../../../src/infra/prisma/prisma.service.js';

/** Exact row counts of every application table: a request that changed nothing leaves them all equal. */
export async function tableCounts(prisma: PrismaService): Promise<Record<string, number>> {
  const tables = await prisma.$queryRaw<{ name: string }[]>`
    SELECT table_name AS name FROM information_schema.tables
    WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> '_prisma_migrations'
    ORDER BY table_name`;
  const counts: Record<string, number> = {};
  for (const { name } of tables) {
    const [row] = await prisma.$queryRawUnsafe<{ n: bigint }[]>(`SELECT count(*) AS n FROM "${name}"`);
    counts[name] = Number(row.n);
  }
  return counts;
}

/** Runs `fn` over the items, `width` at a time (fast, but bounded so the pool is not exhausted). */
export async function inBatches<T, R>(items: T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += width) {
    out.push(...(await Promise.all(items.slice(i, i + width).map(fn))));
  }
  return out;
}
