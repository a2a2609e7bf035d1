/**
 * Recipients' personal data in what the console shows: masked unless an operator reveals one event
 * (which the audit log records). By key, anywhere in an envelope: names, national identity numbers,
 * e-mail addresses, and a recipient's whole addressing. By value shape, in every string shown (keys
 * too, and free text such as a subject or an error): eleven-digit numbers (NINs) and e-mail addresses.
 * Masking keeps the structure, so a masked envelope still reads as the event it is.
 */

/** Keys whose values are personal data, compared without case, `-` or spaces (display_name, displayName, e-mail…). */
const PERSONAL_KEYS = new Set(
  [
    'name',
    'display_name',
    'first_name',
    'last_name',
    'full_name',
    'given_name',
    'family_name',
    'middle_name',
    'recipient_name',
    'nin',
    'national_id',
    'national_identity_number',
    'ssn',
    'email',
    'e_mail',
    'email_address',
    'phone',
    'phone_number',
    'mobile',
    'address',
    'postal_address',
    'street',
    'date_of_birth',
    'birth_date',
    'dob',
    'cac',
    // A recipient's addressing ({type, nin} / {type, email} / {type, claim_code, name}): the whole object.
    'addressing',
    'identifier',
    'recipient_identifier',
  ].map((k) => k.replace(/_/g, '')),
);

const normalKey = (key: string): string => key.toLowerCase().replace(/[\s_-]/g, '');

export const isPersonalKey = (key: string): boolean => PERSONAL_KEYS.has(normalKey(key));

/** Eleven digits not part of a longer run of digits: a NIN's shape. */
const NIN = /(?<!\d)\d{11}(?!\d)/g;
/** An e-mail address: something@domain.tld, without spaces or angle brackets. */
const EMAIL = /[^\s@<>()[\]\\,;:"']+@[^\s@<>()[\]\\,;:"']+\.[^\s@<>()[\]\\,;:"'.]+/g;

export const MASK = {
  nin: '[nin]',
  email: '[e-mail]',
  value: '[masked]',
} as const;

/** A string with every NIN- or e-mail-shaped part replaced. */
export function maskText(text: string): string {
  return text.replace(EMAIL, MASK.email).replace(NIN, MASK.nin);
}

/** A copy of a parsed value with personal data masked by key and by shape (keys included); depth-bounded. */
export function maskValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return maskText(value);
  // A NIN sent as a JSON number.
  if (typeof value === 'number' && /^\d{11}$/.test(String(value))) return MASK.nin;
  if (value === null || typeof value !== 'object') return value;
  if (depth > 64) return MASK.value;
  if (Array.isArray(value)) return value.map((v) => maskValue(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[maskText(k)] = isPersonalKey(k) ? maskWhole(v) : maskValue(v, depth + 1);
  }
  return out;
}

/** A personal value: strings and numbers become the mask; an object or array keeps its shape, every leaf masked. */
function maskWhole(value: unknown, depth = 0): unknown {
  if (value === null || typeof value === 'boolean') return value;
  if (depth > 64 || (typeof value !== 'object' && typeof value !== 'undefined')) return MASK.value;
  if (Array.isArray(value)) return value.map((v) => maskWhole(v, depth + 1));
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    // The addressing's `type` (nin, email, claim_code) says what kind of identifier it was and is kept.
    for (const [k, v] of Object.entries(value as Record<string, unknown>))
      out[maskText(k)] = k === 'type' && typeof v === 'string' ? maskText(v) : maskWhole(v, depth + 1);
    return out;
  }
  return value;
}
