/**
 * glibc's `malloc_trim(0)`: hands the free pages inside the C allocator's arenas back to the system.
 *
 * What the process allocates outside V8's heaps — the Temporal core's Rust runtime, Node's buffers,
 * sockets, TLS, zlib — comes from glibc's malloc, which keeps the blocks freed in its arenas for the
 * next allocation and returns only an arena's free top to the system. Free blocks between used ones
 * stay resident: after an order burst, 50–60 MB of the API + worker process (docs/benchmarks.md,
 * "glibc's malloc_trim"). `malloc_trim(0)` walks every arena and gives the free whole pages among
 * them back (`madvise(MADV_DONTNEED)`), 2–10 ms here; it runs on libuv's thread pool, not on the
 * event loop. platform/memory-release.ts calls it every `MALLOC_TRIM_INTERVAL_MS` and after each
 * memory-reducing collection.
 *
 * Node has no foreign-function interface of its own, so the call goes through koffi (prebuilt
 * binaries in its per-platform packages: nothing is compiled at install). Where there is no glibc
 * (musl, macOS, Windows) there is no `malloc_trim`, and trimming does nothing.
 */
import type { KoffiFunc } from 'koffi';

/** `int malloc_trim(size_t pad)`: 1 if memory was handed back. */
export type MallocTrim = KoffiFunc<(pad: number) => number>;

/** `malloc_trim` of the C library `library`, or null where there is none. */
export async function loadMallocTrim(library = 'libc.so.6'): Promise<MallocTrim | null> {
  if (process.platform !== 'linux') return null;
  try {
    const { default: koffi } = await import('koffi');
    return koffi.load(library).func('int malloc_trim(size_t pad)') as MallocTrim;
  } catch {
    return null; // not glibc (musl has no libc.so.6, and no malloc_trim)
  }
}

let trimmer: Promise<MallocTrim | null> | undefined;

/**
 * Runs `malloc_trim(0)` on the thread pool. Resolves true when memory was handed back, false when
 * there was none to give or the C library has no `malloc_trim`.
 */
export async function trimMalloc(): Promise<boolean> {
  const trim = await (trimmer ??= loadMallocTrim());
  if (!trim) return false;
  return new Promise((resolve, reject) => {
    trim.async(0, (err, released) => (err ? reject(err) : resolve(released === 1)));
  });
}
