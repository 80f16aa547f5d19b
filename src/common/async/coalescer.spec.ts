import { Coalescer } from './coalescer.js';

/** A flush whose batches stay open until released, so the test decides what is in flight. */
function gatedFlush() {
  const batches: number[][] = [];
  const gates: (() => void)[] = [];
  const flush = async (items: number[]) => {
    batches.push(items);
    await new Promise<void>((resolve) => gates.push(resolve));
    return items.map((n) => n * 10);
  };
  return { batches, flush, release: () => gates.shift()?.() };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('Coalescer', () => {
  it('sends a lone call at once, and the calls that arrive meanwhile together in the next batch', async () => {
    const gated = gatedFlush();
    const coalescer = new Coalescer(gated.flush, { maxBatch: 10, maxInFlight: 1 });
    const first = coalescer.run(1);
    await tick();
    expect(gated.batches).toEqual([[1]]);
    const rest = [2, 3, 4].map((n) => coalescer.run(n));
    await tick();
    expect(gated.batches).toEqual([[1]]);
    gated.release();
    expect(await first).toBe(10);
    await tick();
    expect(gated.batches).toEqual([[1], [2, 3, 4]]);
    gated.release();
    expect(await Promise.all(rest)).toEqual([20, 30, 40]);
  });

  it('keeps at most maxInFlight batches running and maxBatch items in each', async () => {
    const gated = gatedFlush();
    const coalescer = new Coalescer(gated.flush, { maxBatch: 2, maxInFlight: 2 });
    const all = [1, 2, 3, 4, 5, 6, 7].map((n) => coalescer.run(n));
    await tick();
    expect(gated.batches).toEqual([[1], [2]]);
    gated.release();
    await tick();
    expect(gated.batches).toEqual([[1], [2], [3, 4]]);
    for (let i = 0; i < 4; i += 1) {
      gated.release();
      await tick();
    }
    expect(await Promise.all(all)).toEqual([10, 20, 30, 40, 50, 60, 70]);
    expect(gated.batches).toEqual([[1], [2], [3, 4], [5, 6], [7]]);
  });

  it('with lingerMs, lets a batch fill while another is in flight, but never delays a lone call', async () => {
    const gated = gatedFlush();
    const coalescer = new Coalescer(gated.flush, { maxBatch: 3, maxInFlight: 2, lingerMs: 40 });
    const lone = coalescer.run(1);
    await tick();
    // Nothing was in flight: it went at once.
    expect(gated.batches).toEqual([[1]]);
    const waited = coalescer.run(2);
    await tick();
    // A slot is free, but a batch is in flight: 2 waits for company.
    expect(gated.batches).toEqual([[1]]);
    const started = performance.now();
    const more = [3].map((n) => coalescer.run(n));
    await new Promise((resolve) => setTimeout(resolve, 60));
    // Not full after the linger: it goes with what it has.
    expect(gated.batches).toEqual([[1], [2, 3]]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(30);
    // A full batch never waits.
    const full = [4, 5, 6].map((n) => coalescer.run(n));
    gated.release();
    await tick();
    expect(gated.batches).toEqual([[1], [2, 3], [4, 5, 6]]);
    gated.release();
    gated.release();
    expect(await Promise.all([lone, waited, ...more, ...full])).toEqual([10, 20, 30, 40, 50, 60]);
  });

  it('with lingerWhenIdle, lets a lone call wait for company too, and a full batch still goes at once', async () => {
    const gated = gatedFlush();
    const coalescer = new Coalescer(gated.flush, {
      maxBatch: 3,
      maxInFlight: 1,
      lingerMs: 40,
      lingerWhenIdle: true,
    });
    const started = performance.now();
    const lone = coalescer.run(1);
    await tick();
    // Nothing is in flight, and still the first call waits.
    expect(gated.batches).toEqual([]);
    const joined = coalescer.run(2);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(gated.batches).toEqual([[1, 2]]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(30);
    gated.release();
    expect(await Promise.all([lone, joined])).toEqual([10, 20]);
    const full = [3, 4, 5].map((n) => coalescer.run(n));
    await tick();
    expect(gated.batches).toEqual([
      [1, 2],
      [3, 4, 5],
    ]);
    gated.release();
    expect(await Promise.all(full)).toEqual([30, 40, 50]);
  });

  it('keeps an item out of a batch canJoin refuses; it goes in the next one', async () => {
    const gated = gatedFlush();
    const coalescer = new Coalescer(gated.flush, {
      maxBatch: 10,
      maxInFlight: 1,
      canJoin: (n, batch) => !batch.includes(n),
    });
    const all = [5, 5, 6, 5].map((n) => coalescer.run(n));
    await tick();
    gated.release();
    await tick();
    gated.release();
    await tick();
    gated.release();
    expect(await Promise.all(all)).toEqual([50, 50, 60, 50]);
    expect(gated.batches).toEqual([[5], [5, 6], [5]]);
  });

  it('rejects every caller of a failed batch and goes on with the next', async () => {
    let calls = 0;
    const coalescer = new Coalescer(
      async (items: number[]) => {
        calls += 1;
        if (calls === 1) throw new Error('database down');
        return items;
      },
      { maxBatch: 10, maxInFlight: 1 },
    );
    const first = coalescer.run(1);
    const second = coalescer.run(2);
    await expect(first).rejects.toThrow('database down');
    expect(await second).toBe(2);
  });

  it('refuses a flush that answers the wrong number of results', async () => {
    const gated = gatedFlush();
    const coalescer = new Coalescer(async (items: number[]) => (await gated.flush(items)).slice(0, 1), {
      maxBatch: 10,
      maxInFlight: 1,
    });
    const all = Promise.allSettled([1, 2, 3].map((n) => coalescer.run(n)));
    await tick();
    gated.release();
    await tick();
    gated.release();
    const outcomes = await all;
    expect(gated.batches).toEqual([[1], [2, 3]]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
  });
});
