/**
 * The numbered parameters (`$1`, `$2`, ...) of one plain-SQL statement, for statements built from parts:
 * an audience filter, or a broadcast page's record, whose parts are written by the repositories that own
 * their tables (each part adds its own values and gets back their placeholders).
 */
export class SqlParams {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}
