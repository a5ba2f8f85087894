import { hash, randomInt } from 'node:crypto';
import type { KeyType } from './entities.ts';

/**
 * API key text: a prefix naming the type and mode, then 40 random base62 characters.
 * Only the SHA-256 and a masked form are stored; the text is shown once, at creation.
 */
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_LENGTH = 40;
const KEY_PATTERN = /^bp_(?:rk_)?(?:live|test)_[0-9A-Za-z]{32,}$/;

export function keyPrefix(type: KeyType, livemode: boolean): string {
  const mode = livemode ? 'live' : 'test';
  return type === 'restricted' ? `bp_rk_${mode}_` : `bp_${mode}_`;
}

export function generateKeyText(type: KeyType, livemode: boolean): string {
  let secret = '';
  for (let i = 0; i < SECRET_LENGTH; i++) secret += BASE62[randomInt(BASE62.length)];
  return keyPrefix(type, livemode) + secret;
}

export function hashKey(text: string): string {
  return hash('sha256', text, 'hex');
}

export function maskKey(text: string): string {
  const prefix = text.slice(0, text.lastIndexOf('_') + 1);
  return `${prefix}…${text.slice(-4)}`;
}

/** True when the text has the shape of one of our keys (checked before any lookup). */
export function isWellFormedKey(text: string): boolean {
  return KEY_PATTERN.test(text);
}
