/**
 * What the strict timestamp readers share (the envelope check in ingress, and the
 * binary COPY of inbox rows): digits read a character at a time, without a regular
 * expression's match per event, and the Gregorian calendar as Postgres counts it.
 */

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The n digits at i as a number, or -1 if any is not a digit (past the end included). */
export function digitsAt(s: string, i: number, n: number): number {
  let v = 0;
  for (let k = 0; k < n; k++) {
    const d = s.charCodeAt(i + k) - 48;
    if (!(d >= 0 && d <= 9)) return -1;
    v = v * 10 + d;
  }
  return v;
}

/** Days in a month (1–12) of a year, with the Gregorian leap rule Postgres uses for every year. */
export function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!;
}

/** The fields readInstant fills: callers keep one and pass it to every call, so reading allocates nothing. */
export interface InstantFields {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  /** How many fraction digits there were (0 to 9), and their value as an integer. */
  fractionDigits: number;
  fraction: number;
  /** The offset east of UTC; 0 for Z. */
  offsetMinutes: number;
}

export function newInstantFields(): InstantFields {
  return { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0, fractionDigits: 0, fraction: 0, offsetMinutes: 0 };
}

const DASH = 45;
const COLON = 58;

/**
 * Whether `at` is `YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|±HH:MM)` naming an instant
 * timestamptz stores, filling `out` with its fields when it is. Date.parse rolls
 * February 30 over into March; Postgres refuses it, so each field is checked
 * against what timestamptz accepts, with the Gregorian leap rule Postgres uses.
 * Read a character at a time: this runs for every event, and a regular
 * expression's match (an array and ten strings) cost more than the check.
 */
export function readInstant(at: string, out: InstantFields): boolean {
  const century = digitsAt(at, 0, 2);
  const yy = digitsAt(at, 2, 2);
  const month = digitsAt(at, 5, 2);
  const day = digitsAt(at, 8, 2);
  const hour = digitsAt(at, 11, 2);
  const minute = digitsAt(at, 14, 2);
  const second = digitsAt(at, 17, 2);
  if ((century | yy | month | day | hour | minute | second) < 0) return false;
  if (at.charCodeAt(4) !== DASH || at.charCodeAt(7) !== DASH || at.charCodeAt(10) !== 84 /* T */) return false;
  if (at.charCodeAt(13) !== COLON || at.charCodeAt(16) !== COLON) return false;
  let i = 19;
  let fractionDigits = 0;
  let fraction = 0;
  if (at.charCodeAt(i) === 46 /* . */) {
    let end = i + 1;
    while (digitsAt(at, end, 1) >= 0) end++;
    fractionDigits = end - i - 1;
    if (fractionDigits === 0 || fractionDigits > 9) return false;
    fraction = digitsAt(at, i + 1, fractionDigits);
    i = end;
  }
  let offsetMinutes = 0;
  const zone = at.charCodeAt(i);
  if (zone === 90 /* Z */) {
    if (at.length !== i + 1) return false;
  } else if (zone === 43 /* + */ || zone === DASH) {
    const oh = digitsAt(at, i + 1, 2);
    const om = digitsAt(at, i + 4, 2);
    if (oh < 0 || om < 0 || at.charCodeAt(i + 3) !== COLON || at.length !== i + 6) return false;
    if (oh > 15 || om > 59) return false;
    offsetMinutes = (oh * 60 + om) * (zone === DASH ? -1 : 1);
  } else {
    return false;
  }
  const year = century * 100 + yy;
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  if (day > daysInMonth(year, month)) return false;
  if (hour > 23 || minute > 59 || second > 59) return false;
  out.year = year;
  out.month = month;
  out.day = day;
  out.hour = hour;
  out.minute = minute;
  out.second = second;
  out.fractionDigits = fractionDigits;
  out.fraction = fraction;
  out.offsetMinutes = offsetMinutes;
  return true;
}

/** The instant readInstant filled `fields` with, in milliseconds since the epoch (the fraction past milliseconds dropped). */
export function instantMs(fields: InstantFields): number {
  const d = fields.fractionDigits;
  const ms = d <= 3 ? fields.fraction * 10 ** (3 - d) : Math.floor(fields.fraction / 10 ** (d - 3));
  const utc = Date.UTC(fields.year, fields.month - 1, fields.day, fields.hour, fields.minute, fields.second, ms);
  // Date.UTC reads years 0-99 as 1900-1999; the envelope's years are four digits, and year 1 is as valid as any.
  const years = fields.year < 100 ? new Date(utc).setUTCFullYear(fields.year) : utc;
  return years - fields.offsetMinutes * 60_000;
}
