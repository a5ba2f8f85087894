/**
 * Serialises a JSON document as XML, for `Accept: application/xml`. Objects become elements,
 * array members become `<item>` elements, null becomes an empty element with `nil="true"`, and a
 * key that is not a valid XML name (free-form metadata keys) becomes `<entry key="…">`.
 */
const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/**
 * Markup characters become entities; CR, and in attributes tab and LF, become character
 * references so a parser's line-end and attribute normalisation gives them back unchanged.
 * Characters XML 1.0 cannot carry at all (C0 controls other than tab, LF, CR; lone surrogates;
 * U+FFFE, U+FFFF), not even as references, become U+FFFD so the document is always well-formed.
 */
const SPECIAL = /[<>&"'\r\t\n]|[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;
const ENTITIES: Record<string, string> = {
  '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;', '\r': '&#13;', '\t': '&#9;', '\n': '&#10;',
};

function escape(text: string, attribute = false): string {
  return text.replace(SPECIAL, (c) => (c === '\t' || c === '\n') && !attribute ? c : ENTITIES[c] ?? '\uFFFD');
}

function element(name: string, value: unknown, out: string[]): void {
  const open = NAME.test(name) && !/^xml/i.test(name) ? name : `entry key="${escape(name, true)}"`;
  const close = open.startsWith('entry ') ? 'entry' : name;
  if (value === null || value === undefined) {
    out.push(`<${open} nil="true"/>`);
  } else if (Array.isArray(value)) {
    out.push(`<${open} type="array">`);
    for (const item of value) element('item', item, out);
    out.push(`</${close}>`);
  } else if (typeof value === 'object') {
    out.push(`<${open}>`);
    for (const [k, v] of Object.entries(value)) element(k, v, out);
    out.push(`</${close}>`);
  } else {
    out.push(`<${open}>${escape(String(value))}</${close}>`);
  }
}

export function toXml(rootName: string, document: unknown): string {
  const out: string[] = ['<?xml version="1.0" encoding="UTF-8"?>'];
  element(rootName, document, out);
  return out.join('');
}
