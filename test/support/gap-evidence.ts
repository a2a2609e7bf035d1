/** What a gap closed from a re-read carries in `evidence` (src/reconciler/close-gaps.ts). */
export interface RereadEvidence {
  kind?: string;
  correspondence_id?: string;
  attribution?: string;
  candidate_count?: number;
  candidate_correspondence_ids?: string[];
}

/** Candidate lists stop at this many files (close-gaps.ts); past it, the event's own may be unlisted. */
const LISTED = 20;

/**
 * How a closed gap's evidence misstates which file its event was about, given the
 * event's own file (the sandbox knows it), or null when it does not: a file named
 * as the event's must be its file; where several fit, its file must be listed; a
 * claim names none as its own.
 */
export function misattribution(gap: { event_type: string; evidence: unknown }, ownFile: string): string | null {
  const ev = gap.evidence as RereadEvidence | null;
  if (ev?.kind !== 'reread') return null;
  if (ev.attribution === 'claim_pairing') return gap.event_type.startsWith('claim.') ? null : `claim_pairing on a ${gap.event_type} gap`;
  if (ev.attribution === 'type_and_time') {
    if (!ev.candidate_correspondence_ids?.length) return 'type_and_time without candidates';
    return (ev.candidate_count ?? 0) > LISTED || ev.candidate_correspondence_ids?.includes(ownFile)
      ? null
      : `its file ${ownFile} is not among the ${ev.candidate_count} candidates`;
  }
  return ev.correspondence_id === ownFile
    ? null
    : `${ev.attribution ?? 'evidence'} names ${ev.correspondence_id}, the event's file is ${ownFile}`;
}
