import DataLoader from 'dataloader';

/**
 * The request's batch loaders, created on first use and dropped with the request (so nothing is
 * cached across requests, keys or modes). A loader is named by what it reads and the arguments of
 * the field that uses it (`orders-of-customer:{"first":5}`): every parent asking with the same
 * arguments in one execution tick shares one batch, hence one SQL statement.
 */
export class Loaders {
  private readonly loaders = new Map<string, DataLoader<string, unknown>>();

  get<V>(name: string, args: unknown, batch: (keys: readonly string[]) => Promise<V[]>): DataLoader<string, V> {
    const key = `${name}:${JSON.stringify(args ?? null)}`;
    let loader = this.loaders.get(key) as DataLoader<string, V> | undefined;
    if (!loader) {
      loader = new DataLoader<string, V>(batch, { maxBatchSize: 500 });
      this.loaders.set(key, loader as DataLoader<string, unknown>);
    }
    return loader;
  }

  /** A loader of one record per id (null when the id is not in the caller's account and mode). */
  byId<V extends { id: string }>(name: string, read: (ids: readonly string[]) => Promise<V[]>): DataLoader<string, V | null> {
    return this.get(name, null, async (ids) => {
      const found = new Map((await read(ids)).map((r) => [r.id, r]));
      return ids.map((id) => found.get(id) ?? null);
    });
  }

  /** A loader of the rows of many parents (`parentOf` names a row's parent), each parent's in the order read. */
  byParent<V>(name: string, args: unknown, parentOf: (row: V) => string | null, read: (parentIds: readonly string[]) => Promise<V[]>): DataLoader<string, V[]> {
    return this.get(name, args, async (parentIds) => {
      const groups = new Map<string, V[]>(parentIds.map((id) => [id, []]));
      for (const row of await read(parentIds)) {
        const parent = parentOf(row);
        if (parent !== null) groups.get(parent)?.push(row);
      }
      return parentIds.map((id) => groups.get(id)!);
    });
  }
}
