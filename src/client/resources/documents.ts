import type { IdempotentCallOptions, UploadDocumentInput, UploadedDocument } from '../types.js';
import { expectObject, expectString } from '../validate.js';
import type { ResourceContext } from './context.js';

export function documentsResource(ctx: ResourceContext) {
  return {
    /**
     * POST /documents. The spec shows no Idempotency-Key for uploads, so none is
     * sent and the call is not retried unless the caller passes a key of its own.
     */
    async upload(input: UploadDocumentInput, options: IdempotentCallOptions = {}): Promise<UploadedDocument> {
      const res = await ctx.transport.send({
        operation: 'documents.upload',
        method: 'POST',
        path: '/documents',
        body: input,
        idempotencyKey: options.idempotencyKey,
        signal: options.signal,
      });
      const body = expectObject('documents.upload', res.status, res.body);
      expectString('documents.upload', res.status, body, 'document_id');
      return body as UploadedDocument;
    },
  };
}
