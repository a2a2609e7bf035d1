import { parse, type DefaultTreeAdapterTypes } from 'parse5';

type Node = DefaultTreeAdapterTypes.ChildNode | DefaultTreeAdapterTypes.Document;

/** A parsed page: its text nodes in document order, and its skeleton (every element with its attribute names). */
export interface ParsedPage {
  texts: string[];
  skeleton: string[];
  elements: Array<{ tag: string; attrs: Record<string, string> }>;
}

export function parsePage(html: string): ParsedPage {
  const doc = parse(html);
  const texts: string[] = [];
  const skeleton: string[] = [];
  const elements: ParsedPage['elements'] = [];
  const walk = (node: Node, depth: number): void => {
    if (node.nodeName === '#text') {
      texts.push((node as DefaultTreeAdapterTypes.TextNode).value);
      return;
    }
    if ('tagName' in node) {
      const attrs = Object.fromEntries(node.attrs.map((a) => [a.name, a.value]));
      elements.push({ tag: node.tagName, attrs });
      skeleton.push(`${depth}:${node.tagName}[${node.attrs.map((a) => a.name).join(',')}]`);
    }
    const children = 'childNodes' in node ? node.childNodes : [];
    // <template> keeps its children in .content
    const content = (node as { content?: { childNodes: Node[] } }).content?.childNodes ?? [];
    for (const child of [...children, ...content]) walk(child as Node, depth + 1);
  };
  walk(doc, 0);
  return { texts, skeleton, elements };
}
