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
