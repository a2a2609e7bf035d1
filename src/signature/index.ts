export { parseSignatureHeader, type ParsedSignatureHeader } from './header.js';
export { sign, computeDigest, SIGNED_PAYLOAD_SCHEMES, type SignedPayloadScheme, type SignOptions } from './sign.js';
export { verifySignature, SIGNATURE_FAILURE_REASONS, type SignatureFailureReason, type VerifyResult, type VerifyOptions } from './verify.js';
