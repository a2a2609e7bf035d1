import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { apiErrors } from './errors.js';
import type { IdFactory } from './ids.js';
import type { Plane } from './catalogue.js';
import type { Document, SandboxState } from './state.js';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Only size and digest are kept: the sandbox never needs the bytes again. A document belongs to the plane it was uploaded on. */
export function createDocument(
  deps: { state: SandboxState; clock: Clock; ids: IdFactory },
  input: { filename: string; media_type: string; content_base64: string },
  plane: Plane,
): Document {
  const b64 = input.content_base64.replace(/\s+/g, '');
  if (!BASE64.test(b64)) throw apiErrors.invalid('content_base64', 'not valid base64 (standard alphabet, padded)');
  const bytes = Buffer.from(b64, 'base64');
  if (bytes.length === 0) throw apiErrors.invalid('content_base64', 'the document is empty');
  const doc: Document = {
    documentId: deps.ids.next('doc'),
    filename: input.filename,
    mediaType: input.media_type,
    sizeBytes: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    createdAt: deps.clock.now(),
    plane,
  };
  deps.state.documents.set(doc.documentId, doc);
  return doc;
}

/** The document if it exists on `plane`: the other plane's documents do not exist for its keys. */
export function documentOn(state: SandboxState, documentId: string, plane: Plane): Document | undefined {
  const d = state.documents.get(documentId);
  return d?.plane === plane ? d : undefined;
}

export function documentView(d: Document): {
  document_id: string;
  filename: string;
  media_type: string;
  size_bytes: number;
  created_at: string;
} {
  return {
    document_id: d.documentId,
    filename: d.filename,
    media_type: d.mediaType,
    size_bytes: d.sizeBytes,
    created_at: new Date(d.createdAt).toISOString(),
  };
}
