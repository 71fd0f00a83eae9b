#!/usr/bin/env python3
"""Writes cron differential-test cases: expression TAB zone TAB start-epoch-ms.

Deterministic for a given seed (argv[1], default 17) and count (argv[2],
default 6000). Covers every Quartz field form, invalid expressions, zones with
DST gaps, overlaps and odd offsets, and start instants at leap days, month and
year ends and DST edges.
"""
import calendar
import random
import sys

ZONES = ["UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe",
         "Asia/Kolkata", "Asia/Kathmandu", "America/Sao_Paulo", "Pacific/Apia",
         "Asia/Shanghai"]
MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT",
          "NOV", "DEC"]
DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]


def ms(y, mo, d, h=0, mi=0, s=0, offset_h=0.0):
    return (calendar.timegm((y, mo, d, h, mi, s)) - int(offset_h * 3600)) * 1000


# Start instants: UTC civil times, plus local civil times around DST edges
# (given as UTC instants near the transitions of the zones above).
STARTS = [
    ms(2024, 2, 28, 23, 59, 59), ms(2024, 2, 29, 12), ms(2023, 2, 28, 0),
    ms(2000, 2, 29, 0), ms(2100 - 1, 12, 31, 23, 59, 59), ms(2024, 12, 31, 23, 59, 59),
    ms(2025, 1, 31, 0), ms(2024, 4, 30, 23), ms(2024, 6, 30, 12), ms(1970, 1, 1),
    ms(2019, 12, 31, 10), ms(2030, 6, 15, 8, 30), ms(2037, 12, 31), ms(2045, 3, 1),
    # America/New_York: gap 2024-03-10 02:00 EST, overlap 2024-11-03 01:00-02:00.
    ms(2024, 3, 10, 1, 59, 59, -5), ms(2024, 3, 10, 1, 30, 0, -5), ms(2024, 11, 3, 0, 59, 59, -4),
    ms(2024, 11, 3, 1, 15, 0, -4), ms(2024, 11, 3, 1, 45, 0, -5), ms(2024, 11, 3, 1, 59, 59, -4),
    # Europe/London: 2024-03-31 01:00 GMT gap, 2024-10-27 01:00-02:00 overlap.
    ms(2024, 3, 31, 0, 59, 59), ms(2024, 10, 27, 1, 30, 0, 1), ms(2024, 10, 27, 1, 30, 0, 0),
    # Australia/Lord_Howe: 2024-10-06 02:00 -> 02:30 (+10:30 -> +11),
    # 2024-04-07 02:00 -> 01:30 (+11 -> +10:30).
    ms(2024, 10, 6, 1, 59, 0, 10.5), ms(2024, 10, 6, 1, 35, 0, 10.5),
    ms(2024, 4, 7, 1, 40, 0, 11), ms(2024, 4, 7, 1, 40, 0, 10.5),
    # America/Sao_Paulo: 2018-11-04 00:00 -> 01:00 (midnight gap), 2019-02-16 overlap.
    ms(2018, 11, 3, 23, 59, 59, -3), ms(2019, 2, 16, 23, 30, 0, -2), ms(2019, 2, 16, 23, 30, 0, -3),
    # Pacific/Apia: 2011-12-29 skipped entirely; DST 2020-09-27 03:00 -> 04:00.
    ms(2011, 12, 29, 23, 0, 0, -10), ms(2020, 9, 27, 2, 59, 0, 13), ms(2021, 4, 4, 3, 30, 0, 14),
    # Asia/Shanghai 1991 DST; Asia/Kathmandu 1986 offset change.
    ms(1991, 4, 14, 1, 59, 0, 8), ms(1991, 9, 15, 1, 30, 0, 9), ms(1985, 12, 31, 23, 59, 0, 5.5),
]


def num(lo, hi, r):
    return str(r.randint(lo, hi))


def simple_field(r, lo, hi, names=None, allow_wide_step=True):
    """One list item of a plain field."""
    def value():
        if names and r.random() < 0.3:
            name = r.choice(names)
            return r.choice([name, name.lower(), name.capitalize()])
        return num(lo, hi, r)
    k = r.random()
    span = hi - lo + 1
    step_hi = span + 3 if allow_wide_step else span - 1
    if k < 0.2:
        return value()
    if k < 0.35:
        return "%s-%s" % (value(), value())
    if k < 0.5:
        return "%s-%s/%d" % (num(lo, hi, r), num(lo, hi, r), r.randint(1, step_hi))
    if k < 0.62:
        return "%s/%d" % (num(lo, hi, r), r.randint(1, step_hi))
    if k < 0.72:
        return "*/%d" % r.randint(1, step_hi)
    if k < 0.76:
        return "/%d" % r.randint(1, step_hi)
    if k < 0.8 and names:
        return "%s-%s" % (r.choice(names), r.choice(names))
    return "*"


def field(r, lo, hi, names=None):
    if r.random() < 0.25:
        return "*"
    items = [simple_field(r, lo, hi, names) for _ in range(r.choice([1, 1, 1, 2, 3]))]
    return ",".join(items)


def dom_field(r):
    k = r.random()
    if k < 0.3:
        return field(r, 1, 31)
    forms = ["L", "LW", "L-%d" % r.randint(0, 31), "L-%dW" % r.randint(0, 30),
             "%dW" % r.choice([1, 2, 15, 28, 29, 30, 31, r.randint(1, 31)]),
             "%dW,%d" % (r.randint(1, 31), r.randint(1, 31))]
    return r.choice(forms)


def dow_field(r):
    k = r.random()
    if k < 0.4:
        return field(r, 1, 7, DAYS)
    d = r.choice([str(r.randint(1, 7)), r.choice(DAYS), r.choice(DAYS).lower()])
    forms = ["%sL" % d, "%s#%d" % (d, r.randint(1, 5)), "L", "%s#5" % d]
    return r.choice(forms)


def year_field(r):
    k = r.random()
    if k < 0.25:
        return str(r.randint(1995, 2040))
    if k < 0.4:
        a = r.randint(1990, 2035)
        return "%d-%d" % (a, a + r.randint(0, 10))
    if k < 0.5:
        return "%d/%d" % (r.randint(2000, 2030), r.randint(1, 6))
    if k < 0.6:
        return "%d,%d" % (r.randint(2010, 2030), r.randint(2010, 2030))
    if k < 0.65:
        return str(r.randint(1960, 2019))  # often a past year: never fires
    return "*"


INVALID = [
    "0 0 25 * * ?", "60 * * * * ?", "* 60 * * * ?", "0 0 0 32 * ?", "0 0 0 0 * ?",
    "0 0 0 * 13 ?", "0 0 0 ? * 8", "0 0 0 ? * 0", "0 0 0 ? ? ?", "0 0 0 * * *",
    "0 0 0 1 * MON", "0 0 0 * *", "0 0", "", "0 0 0 ? * MON#6", "0 0 0 ? * MON#0",
    "0 0 0 ? * 2#", "0 0 0 L-31 * ?", "0 0 0 32W * ?", "0 0 0 ? * MON,TUE#2,WED#3",
    "0 0 0 1,L * ?", "0 0 0 ? * 1,5L", "*/0 * * * * ?", "*/61 * * * * ?",
    "0 */25 * * * ?", "0 0 0 ? JANUARY *", "0 0 0 ? * MONDAY", "0 0 0 ? FOO *",
    "0 0 0 ? * BAR", "0 0 0 ? * 1-8", "0 0 0 1-32 * ?", "a b c d e f", "0 0 0 1 1 ? 2020-2010",
    "0 0 0 ? * MON-FRI/2", "0 0 0 1 JAN/3 ?", "0 0 0 ?X * *", "0 0 0 1W-5 * ?",
    "0 0 0 * * ? *,2000", "0 0 0 5L * ?", "0 0 0 ? * 2W", "0 0 0 L * L", "0 0 L * * ?",
    "5X * * * * ?", "0 0 0 15W * ? 2020 extra", "0  0  0 * * ?  ", "0 0 0 ? * 5#3,6#1",
    "0 0 0 * * ? 1969", "0 0 0 * * ? 2100", "0 0 0 * * ? 2199", "0-59/61 * * * * ?",
    "0/90 * * * * ?", "0 0 0/30 * * ?", "0 0 0 1/40 * ?", "0 0 0 ? 1/13 *", "0 0 0 ? * 1/8",
    "0 0 0 L-5W * ?", "0 0 0 L-28W 2 ?", "0 0 0 31W 2 ?", "0 0 0 30W 2 ?", "0 0 0 31W * ?",
    "0 0 0 30 2 ?", "0 0 0 ? 2 MON#5", "0 0 0 ? * 5#5", "0 0 0 29 2 ? 2100",
    # Quartz's markers as values: 99 is `*`, 98 in a day field is `?`.
    "99 * * * * ?", "0 0 0 98 * MON", "0 0 99 * * ?", "0 0 0 ? * 98", "0 0 0 1 1 ? 99",
]


MUTATION_CHARS = "0123456789LW#?*/-, ABCDEFJMNOSTUWYlw\f+"


def mutate(r, expr):
    """A character-level edit: checks that validity agrees on near misses."""
    chars = list(expr)
    for _ in range(r.randint(1, 3)):
        k = r.random()
        pos = r.randint(0, len(chars))
        if k < 0.4 or not chars:
            chars.insert(pos, r.choice(MUTATION_CHARS))
        elif k < 0.7:
            del chars[min(pos, len(chars) - 1)]
        else:
            chars[min(pos, len(chars) - 1)] = r.choice(MUTATION_CHARS)
    return "".join(chars).replace("\t", " ")


def expression(r):
    if r.random() < 0.12:
        return r.choice(INVALID)
    if r.random() < 0.15:
        return mutate(r, expression(r))
    sec = field(r, 0, 59) if r.random() < 0.5 else str(r.choice([0, 0, 0, 30, r.randint(0, 59)]))
    mi = field(r, 0, 59) if r.random() < 0.6 else str(r.randint(0, 59))
    hr = field(r, 0, 23)
    mon = field(r, 1, 12, MONTHS)
    if r.random() < 0.5:
        dom, dow = dom_field(r), "?"
    else:
        dom, dow = "?", dow_field(r)
    if r.random() < 0.04:
        dom = dom_field(r) if r.random() < 0.5 else "?"  # both set, or both '?'
        dow = dow_field(r) if dom == "?" and r.random() < 0.5 else ("?" if r.random() < 0.5 else dow_field(r))
    parts = [sec, mi, hr, dom, mon, dow]
    if r.random() < 0.35:
        parts.append(year_field(r))
    return " ".join(parts)


def transitions(zone, years):
    """UTC instants (s) where `zone` changes its offset in `years`."""
    from datetime import datetime, timedelta, timezone
    from zoneinfo import ZoneInfo
    z = ZoneInfo(zone)
    out = []
    day = datetime(years[0], 1, 1, tzinfo=timezone.utc)
    end = datetime(years[-1] + 1, 1, 1, tzinfo=timezone.utc)
    off = day.astimezone(z).utcoffset()
    while day < end:
        nxt = day + timedelta(days=1)
        noff = nxt.astimezone(z).utcoffset()
        if noff != off:
            lo, hi = day, nxt  # offset changes in (lo, hi]
            while hi - lo > timedelta(seconds=1):
                mid = lo + (hi - lo) / 2
                if mid.astimezone(z).utcoffset() == off:
                    lo = mid
                else:
                    hi = mid
            out.append(int(hi.timestamp()))
            off = noff
        day = nxt
    return out


# Expressions that fire often enough to meet a DST transition.
DST_EXPRESSIONS = [
    "0 */20 * * * ?", "0 30 2 * * ?", "0 0 * * * ?", "*/30 * * * * ?",
    "0 10,35 * * * ?", "0 0 0 * * ?", "0 0 12 LW * ?", "0 30 0-3 ? * *",
    "0 15,45 1-3 * * ?", "0 0 2 ? * SUN", "0 30 1 * * ?", "0 0/7 0-4 * * ?",
    "0 0 0 15W * ?", "59 59 1 * * ?", "0 0 0 ? * 1L",
]


def dst_cases(r):
    """Every DST expression from around each transition of the DST zones,
    including after 2037 (where Java's zone data switches to rules)."""
    out = []
    for zone in ["America/New_York", "Europe/London", "Australia/Lord_Howe",
                 "America/Sao_Paulo", "Pacific/Apia", "Asia/Shanghai",
                 "Asia/Kathmandu"]:
        for t in transitions(zone, list(range(1985, 1992)) + list(range(2010, 2026))
                             + list(range(2036, 2041))):
            for delta in (-3600, -1, 0, 1799, 1800 + r.randint(0, 3600)):
                expr = r.choice(DST_EXPRESSIONS)
                out.append("%s\t%s\t%d\n" % (expr, zone, (t + delta) * 1000))
    return out


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 17
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 6000
    r = random.Random(seed)
    out = sys.stdout
    for i in range(count):
        expr = expression(r)
        zone = ZONES[i % len(ZONES)] if r.random() < 0.8 else r.choice(ZONES)
        if r.random() < 0.3:
            start = r.choice(STARTS)
        else:
            start = ms(r.randint(1971, 2040), r.randint(1, 12), r.randint(1, 28),
                       r.randint(0, 23), r.randint(0, 59), r.randint(0, 59))
        # Sub-second starts, except with W: Quartz compares a W day's time
        # with the start using the wall clock's milliseconds, so there it
        # depends on when it runs.
        if r.random() < 0.15 and "W" not in expr.upper():
            start += r.randint(1, 999)
        out.write("%s\t%s\t%d\n" % (expr, zone, start))
    for line in dst_cases(r):
        out.write(line)
    # Every fixed invalid/edge expression in every zone from one DST edge.
    for expr in INVALID:
        for zone in ZONES:
            out.write("%s\t%s\t%d\n" % (expr, zone, ms(2024, 3, 10, 1, 0, 0, -5)))


if __name__ == "__main__":
    main()
