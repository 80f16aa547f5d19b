import type { JobDef } from './queues.js';

const ON_JOB = Symbol('on-job');

export interface OnJobEntry {
  job: JobDef;
  method: string | symbol;
}

/**
 * Marks a processor method as the handler of one job (it receives the BullMQ job and the worker's lock
 * token). JobProcessor finds these methods and registers them with the JobRegistry; the worker refuses to
 * boot when a job of JOBS has no handler.
 */
export function OnJob(job: JobDef): MethodDecorator {
  return (target, method) => {
    const entries = (Reflect.getOwnMetadata(ON_JOB, target) as OnJobEntry[] | undefined) ?? [];
    Reflect.defineMetadata(ON_JOB, [...entries, { job, method }], target);
  };
}

/** The `@OnJob` methods declared on a processor's class (and the classes it extends). */
export function onJobEntries(instance: object): OnJobEntry[] {
  const entries: OnJobEntry[] = [];
  for (let proto = Object.getPrototypeOf(instance); proto; proto = Object.getPrototypeOf(proto)) {
    entries.push(...((Reflect.getOwnMetadata(ON_JOB, proto) as OnJobEntry[] | undefined) ?? []));
  }
  return entries;
}
