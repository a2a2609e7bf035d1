export { parseSignatureHeader } from './header.js';
export { sign, SIGNED_PAYLOAD_SCHEMES, type SignedPayloadScheme, type SignOptions } from './sign.js';
export { verifySignature, SIGNATURE_FAILURE_REASONS, type SignatureFailureReason } from './verify.js';
