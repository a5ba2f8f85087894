import { describe, expect, it } from 'vitest';
import { isId, newId } from '../../platform/ids.ts';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** The 16 bytes behind a TypeID suffix (26 base32 characters = 2 padding bits + 128 bits). */
function decode(suffix: string): Uint8Array {
  let bits = 0n;
  for (const c of suffix) bits = (bits << 5n) | BigInt(ALPHABET.indexOf(c));
  return Uint8Array.from({ length: 16 }, (_, i) => Number((bits >> BigInt(8 * (15 - i))) & 0xffn));
}

describe('ids', () => {
  it('are TypeIDs over UUIDv7: prefix, version 7, RFC variant, the current millisecond', () => {
    const before = Date.now();
    const id = newId('customer');
    const after = Date.now();
    expect(id).toMatch(/^cus_[0-7][0-9a-hjkmnp-tv-z]{25}$/);
    expect(isId('customer', id)).toBe(true);
    expect(isId('order', id)).toBe(false);
    const bytes = decode(id.slice(4));
    expect(bytes[6]! >> 4).toBe(7);
    expect(bytes[8]! >> 6).toBe(0b10);
    const ms = bytes.slice(0, 6).reduce((acc, b) => acc * 256 + b, 0);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after);
  });

  it('sort in the order they were made, also within one millisecond', () => {
    const ids = Array.from({ length: 50_000 }, () => newId('event'));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });
});
