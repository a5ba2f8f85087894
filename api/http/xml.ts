/**
 * Serialises a JSON document as XML, for `Accept: application/xml`. Objects become elements,
 * array members become `<item>` elements, null becomes an empty element with `nil="true"`, and a
 * key that is not a valid XML name (free-form metadata keys) becomes `<entry key="…">`.
 */
const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

function escape(text: string): string {
  return text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);
}

function element(name: string, value: unknown, out: string[]): void {
  const open = NAME.test(name) && !/^xml/i.test(name) ? name : `entry key="${escape(name)}"`;
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
