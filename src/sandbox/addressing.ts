import { z } from 'zod';

/**
 * Recipient addressing. The spec shows only the NIN form ({type: "nin", nin}); the
 * e-mail, CAC and claim-code forms' names are not shown, so the sandbox chose
 * {type: "email", email}, {type: "cac", cac} and {type: "claim_code", name}.
 */
export const ADDRESSING_TYPES = ['nin', 'email', 'cac', 'claim_code'] as const;

export const addressingSchema = z.discriminatedUnion(
  'type',
  [
    z.object({
      type: z.literal('nin'),
      nin: z.string({ error: 'required: the eleven-digit NIN' }).regex(/^\d{11}$/, 'a NIN is exactly eleven digits (0-9)'),
    }),
    z.object({
      type: z.literal('email'),
      email: z
        .string({ error: 'required: the e-mail address' })
        .max(254)
        .regex(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, 'not an e-mail address'),
    }),
    z.object({
      type: z.literal('cac'),
      cac: z
        .string({ error: 'required: the CAC registration number' })
        .regex(/^(RC|BN|IT)?\d{4,10}$/i, 'a CAC number is 4 to 10 digits, optionally prefixed RC, BN or IT'),
    }),
    z.object({ type: z.literal('claim_code'), name: z.string({ error: "required: the recipient's name" }).trim().min(1).max(200) }),
  ],
  { error: (iss) => (iss.code === 'invalid_union' ? `type must be one of ${ADDRESSING_TYPES.join(', ')}` : undefined) },
);

/** One recipient's addressing, as addressingSchema admits it (written out so that the public API does not name the schema). */
export type Addressing =
  { type: 'nin'; nin: string } | { type: 'email'; email: string } | { type: 'cac'; cac: string } | { type: 'claim_code'; name: string };
// The schema and the type describe the same values: a change to one fails to compile until the other follows.
const sameAsSchema: [z.infer<typeof addressingSchema>, Addressing] extends [Addressing, z.infer<typeof addressingSchema>] ? true : never =
  true;
void sameAsSchema;

export const recipientSchema = z.object({
  addressing: addressingSchema,
  display_name: z.string().max(200).optional(),
  ref: z.string({ error: 'required: your reference for the recipient' }).min(1).max(200),
});
export type RecipientInput = z.infer<typeof recipientSchema>;

export type Outcome = 'delivered' | 'held' | 'undeliverable';

/**
 * Where a recipient ends up, decided by the identifier alone so tests can choose:
 * - NIN and CAC: last digit 8 → held (not yet verified), 9 → undeliverable, else delivered;
 * - e-mail: a `+held` tag → held, a `+bounce` tag → undeliverable, else delivered;
 * - claim code: held until the code is claimed (or undeliverable when it expires).
 */
export function outcomeFor(a: Addressing): Outcome {
  switch (a.type) {
    case 'nin':
    case 'cac': {
      const last = (a.type === 'nin' ? a.nin : a.cac).slice(-1);
      return last === '8' ? 'held' : last === '9' ? 'undeliverable' : 'delivered';
    }
    case 'email': {
      const local = a.email.split('@')[0]!.toLowerCase();
      return local.endsWith('+held') ? 'held' : local.endsWith('+bounce') ? 'undeliverable' : 'delivered';
    }
    case 'claim_code':
      return 'held';
  }
}

/** A recipient's identity across files: verifying it releases every held item addressed to it. */
export function identityKey(a: Addressing): string {
  switch (a.type) {
    case 'nin':
      return `nin:${a.nin}`;
    case 'email':
      return `email:${a.email.toLowerCase()}`;
    case 'cac':
      return `cac:${a.cac.toUpperCase()}`;
    case 'claim_code':
      return `claim_code:${a.name.toLowerCase()}`;
  }
}
