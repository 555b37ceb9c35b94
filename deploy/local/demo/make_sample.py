"""Generate the demo's bundled sample, `deploy/local/demo/sample.jsonl` (deterministic).

    python deploy/local/demo/make_sample.py            # rewrite sample.jsonl
    python deploy/local/demo/make_sample.py --check    # exit 1 if the file is stale

The sample is a crawl-like stream of invented English and Chinese news articles built from
the sentence pools in `sample_templates.json`, interleaved with the kinds of near-duplicates a
news crawler sees: syndicated copies (wire datelines, bylines, "Share this article" footers),
exact reposts, whitespace/punctuation-only reformatting, light copy edits, corrected
re-publications of articles first published with typos, truncated teasers, reordered
paragraphs, and "developing story" updates (related but usually below the threshold).
Two deliberately malformed lines (bad JSON; text under the wrong field) exercise the DLQ.

Every line is one JSON object: id, title, url, lang, timestamp, text.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import unicodedata
from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

TEMPLATES = Path(__file__).resolve().parent / "sample_templates.json"
T = SimpleNamespace(
    **{k: v for k, v in json.loads(TEMPLATES.read_text(encoding="utf-8")).items() if k[0] != "_"}
)

SEED = 20240304
OUT = Path(__file__).resolve().parent / "sample.jsonl"
BASES = {"en": 170, "zh": 115}
COPIES = 175
MAX_BASE_JACCARD = 0.45  # different stories on one topic stay far below the 0.8 threshold
QUANTITY = re.compile(r"(?<![\d.,:])\d{2,3}(?![\d.,:月日时号])")  # not dates, times, decimals
MIN_BODY = {"en": 600, "zh": 300}  # characters of body sentences (templates) per article
START = datetime(2024, 5, 27, 5, 30, tzinfo=timezone.utc)
KINDS = {  # near-duplicate kind -> weight
    "syndicated": 30,
    "exact": 9,
    "format": 7,
    "edit": 17,
    "correction": 9,
    "truncate": 10,
    "reorder": 10,
    "update": 8,
}


@dataclass
class Article:
    """One published document (a base article or a copy of an earlier one)."""

    id: str
    lang: str
    topic: str
    title: str
    paragraphs: list[str]
    url: str
    ctx: dict[str, str]
    when: datetime
    clean: list[str] | None = None  # original text when published with typos
    root: str = ""
    kind: str = "base"

    @property
    def text(self) -> str:
        return "\n\n".join(self.paragraphs)


def shingles(text: str, k: int = 5) -> set[str]:
    """Character k-grams of the text as the engine normalises it (NFKC, casefold, spaces)."""
    norm = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return {norm[i : i + k] for i in range(max(1, len(norm) - k + 1))}


def jaccard(a: set[str], b: set[str]) -> float:
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def context(rng: random.Random, lang: str, topic: dict, when: datetime) -> dict[str, str]:
    """Random facts (places, people, numbers) for one article's placeholders; dates follow
    the publication time `when` (Beijing time for Chinese articles)."""
    local = when + timedelta(hours=8 if lang == "zh" else 0)
    m, ahead = local.month, rng.randint(1, 3)
    ctx: dict[str, str] = {
        "year": str(local.year),
        "month": str(m),
        "day": str(local.day),
        "day2": str((local + timedelta(days=1)).day),
        "mm": f"{m:02d}",
        "dd": f"{local.day:02d}",
        "later_month": str((m + ahead - 1) % 12 + 1),
        "last_month": str((m - 2) % 12 + 1),
    }
    if lang == "en":
        city, region = rng.choice(T.EN_CITIES)
        p = rng.sample([f"{f} {s}" for f in T.EN_FIRST for s in T.EN_LAST], 3)
        wd = rng.sample(T.EN_WEEKDAYS, 2)
        c = rng.sample(T.EN_COMPANIES, 2)
        big = rng.randint(6, 9)
        ctx.update(
            city=city,
            region=region,
            CITY=city.upper(),
            p1=p[0],
            p2=p[1],
            p3=p[2],
            weekday=wd[0],
            weekday2=wd[1],
            month=T.EN_MONTHS[m - 1],
            later_month=T.EN_MONTHS[(m + ahead - 1) % 12],
            last_month=T.EN_MONTHS[(m - 2) % 12],
            company=c[0],
            company2=c[1],
            money1=f"${rng.uniform(0.8, 9.5):.1f} billion",
            money2=f"${rng.randint(12, 480)} million",
            money3=f"${rng.uniform(1, 6):.1f} billion",
            num1=str(rng.randint(12, 95)),
            num2=str(rng.randint(120, 950)),
            num3=f"{rng.randint(1200, 48000):,}",
            small1=str(big),
            small2=str(rng.randint(2, big - 1)),
            **{f"pct{i}": f"{rng.uniform(0.3, 9.5):.1f}" for i in range(1, 6)},
        )
    else:
        p = rng.sample([s + g for s in T.ZH_SURNAMES for g in T.ZH_GIVEN], 3)
        d = rng.sample(T.ZH_DISTRICTS, 2)
        ctx.update(
            city=rng.choice(T.ZH_CITIES),
            district=d[0],
            district2=d[1],
            p1=p[0],
            p2=p[1],
            p3=p[2],
            company=rng.choice(T.ZH_COMPANIES),
            km=f"{rng.uniform(18, 45):.1f}",
            pct1=f"{rng.uniform(3, 9):.1f}",
            pct2=f"{rng.uniform(2, 15):.1f}",
            pct3=f"{rng.uniform(0.1, 2.0):.1f}",
            pct4=f"{rng.uniform(4, 9):.1f}",
            pct5=f"{rng.uniform(5, 20):.1f}",
            n1=str(rng.randint(2, 9)),
            n2=str(rng.randint(10, 60)),
            n3=str(rng.randint(20, 99)),
            n4=str(rng.randint(100, 980)),
        )
    for name, choices in topic.get("slots", {}).items():
        ctx[name] = rng.choice(choices).format_map(ctx)
    outlet, domain = rng.choice(T.EN_OUTLETS if lang == "en" else T.ZH_OUTLETS)
    agencies = T.EN_AGENCIES if lang == "en" else T.ZH_AGENCIES
    ctx.update(outlet=outlet, domain=domain, agency=rng.choice(agencies))
    return ctx


def compose(
    rng: random.Random, lang: str, topic: dict, ctx: dict[str, str]
) -> tuple[str, list[str]]:
    """A title and paragraphs: lede, then a random ordered subset of body sentences + quotes."""
    fill = lambda s: s.format_map(ctx)  # noqa: E731
    order = rng.sample(range(len(topic["body"])), len(topic["body"]))
    k = rng.randint(*((4, 6) if lang == "en" else (6, 9)))
    while k < len(order) and sum(len(topic["body"][i]) for i in order[:k]) < MIN_BODY[lang]:
        k += 1
    sentences = [fill(topic["body"][i]) for i in sorted(order[:k])]
    for q in rng.sample(topic["quotes"], rng.randint(1, 2)):
        sentences.insert(rng.randint(1, len(sentences)), fill(q))
    i = rng.randrange(len(topic["ledes"]))  # titles[i] goes with ledes[i]; extra titles fit any
    title = fill(rng.choice([topic["titles"][i], *topic["titles"][len(topic["ledes"]) :]]))
    paragraphs = [fill(topic["ledes"][i])]
    sep = " " if lang == "en" else ""
    while sentences:
        take = 1 if sentences[0].startswith(('"', "“")) else rng.choice((1, 2, 2))
        paragraphs.append(sep.join(sentences[:take]))
        del sentences[:take]
    while len("\n\n".join(paragraphs)) > 1900:
        paragraphs.pop()
    return title, paragraphs


def add_typos(rng: random.Random, lang: str, paragraphs: list[str]) -> list[str]:
    """A few realistic typos: swapped/dropped letters (en) or homophone characters (zh)."""
    out = list(paragraphs)
    for _ in range(rng.randint(2, 4)):
        i = rng.randrange(1, len(out))
        if lang == "en":
            words = [m for m in re.finditer(r"[a-z]{6,}", out[i])]
            if not words:
                continue
            m = rng.choice(words)
            w, j = m.group(), rng.randint(1, len(m.group()) - 3)
            typo = (
                w[:j] + w[j + 1] + w[j] + w[j + 2 :] if rng.random() < 0.6 else w[:j] + w[j + 1 :]
            )
            out[i] = out[i][: m.start()] + typo + out[i][m.end() :]
        else:
            right, wrong = rng.choice(T.ZH_TYPOS)
            out[i] = out[i].replace(right, wrong, 1)
    return out


def boiler(rng: random.Random, lang: str, pool: list[str], ctx: dict[str, str]) -> str:
    """One header/footer line: the copying outlet's name and staff, the story's city."""
    fresh = context(rng, lang, {}, START)
    keep = {k: ctx[k] for k in ("city", "CITY", "month", "day", "mm", "dd") if k in ctx}
    return rng.choice(pool).format_map(
        {**fresh, **keep, "outlet": ctx["copy_outlet"], "domain": ctx["copy_domain"]}
    )


def mutate(rng: random.Random, parent: Article, kind: str) -> tuple[str, list[str], bool]:
    """Title, paragraphs and whether the copy keeps the parent's URL, for one copy kind."""
    en = parent.lang == "en"
    paras, title = list(parent.paragraphs), parent.title
    ctx = dict(parent.ctx)
    ctx["copy_outlet"], ctx["copy_domain"] = rng.choice(T.EN_OUTLETS if en else T.ZH_OUTLETS)
    if kind == "syndicated":
        header = boiler(rng, parent.lang, T.EN_HEADERS if en else T.ZH_HEADERS, ctx)
        if en and header.endswith(" -"):
            paras[0] = f"{header} {paras[0]}"
        else:
            paras.insert(0, header)
        paras += [
            boiler(rng, parent.lang, T.EN_FOOTERS if en else T.ZH_FOOTERS, ctx)
            for _ in range(rng.randint(1, 2))
        ]
        return (
            f"{title} | {ctx['copy_outlet']}" if en else f"{title}_{ctx['copy_outlet']}",
            paras,
            False,
        )
    if kind == "exact":
        return title, paras, False
    if kind == "format":
        if en:
            spaced = [p.replace(". ", ".  ") + " " for p in paras]  # reflowed, extra spaces
            return title.upper() if rng.random() < 0.3 else title, ["\n".join(spaced)], False
        half = str.maketrans({"，": ",", "：": ":", "；": ";", "（": "(", "）": ")", "！": "!"})
        return title, [p.translate(half) for p in paras], False
    if kind == "edit":
        edits = T.EN_EDITS if en else T.ZH_EDITS
        for old, new in rng.sample(edits, len(edits)):
            hits = [i for i, p in enumerate(paras) if old in p]
            if hits:
                i = rng.choice(hits)
                paras[i] = paras[i].replace(old, new, 1)
                if sum(a != b for a, b in zip(paras, parent.paragraphs, strict=True)) >= 3:
                    break
        return title, paras, False
    if kind == "correction":
        note = rng.choice(T.EN_CORRECTIONS if en else T.ZH_CORRECTIONS)
        return title, [*(parent.clean or paras), note], True
    if kind == "truncate":
        text = parent.text[: int(len(parent.text) * rng.uniform(0.9, 0.98))]
        end = max(text.rfind(". "), text.rfind("。"), text.rfind("\n"))  # last sentence end
        teaser = (
            text[: end + 1].rstrip()
            + " "
            + rng.choice(T.EN_TRUNCATIONS if en else T.ZH_TRUNCATIONS)
        )
        return title, teaser.split("\n\n"), False
    if kind == "reorder":
        i, j = sorted(rng.sample(range(1, len(paras)), 2))
        paras[i], paras[j] = paras[j], paras[i]
        return title, paras, False
    if kind == "update":
        note = rng.choice(T.EN_UPDATES if en else T.ZH_UPDATES).format_map(ctx)
        del paras[rng.randrange(1, len(paras))]
        bump = lambda m: str(int(m.group()) + rng.randint(1, 9))  # noqa: E731 (new figures)
        paras = [QUANTITY.sub(bump, p, count=2) for p in paras]
        return ("UPDATE 1-" + title if en else title + "（更新）"), [note, *paras], True
    raise ValueError(kind)


def slug_url(rng: random.Random, lang: str, domain: str, title: str, when: datetime) -> str:
    """A plausible article URL on `domain`."""
    if lang == "en":
        slug = "-".join(re.findall(r"[a-z0-9]+", title.lower())[:8])
        return f"https://{domain}/news/{when:%Y/%m/%d}/{slug}"
    return f"https://{domain}/news/{when:%Y%m%d}/{rng.randint(100000, 999999)}.html"


def generate(seed: int = SEED) -> list[Article]:
    """The valid articles in stream order: bases and their near-duplicate copies."""
    rng = random.Random(seed)
    slots = ["base"] * (sum(BASES.values()) - 8) + ["copy"] * COPIES
    rng.shuffle(slots)
    slots = ["base"] * 8 + slots  # something to copy from before the first copy
    left = dict(BASES)
    counters = {"en": 0, "zh": 0}
    stream: list[Article] = []
    by_topic: dict[tuple[str, str], list[set[str]]] = {}
    corrected: set[str] = set()
    per_story: Counter[str] = Counter()
    when = START
    for slot in slots:
        when += timedelta(minutes=rng.randint(10, 140))
        if slot == "base":
            lang = rng.choices(list(left), weights=list(left.values()))[0]
            left[lang] -= 1
            topics = T.EN_TOPICS if lang == "en" else T.ZH_TOPICS
            best: tuple[float, str, dict[str, str], str, list[str], set[str]] | None = None
            for _attempt in range(60):  # keep the attempt least similar to its topic's bases
                name = rng.choice(sorted(topics))
                ctx = context(rng, lang, topics[name], when)
                title, paras = compose(rng, lang, topics[name], ctx)
                sh = shingles("\n\n".join(paras))
                worst = 0.0
                for other in by_topic.get((lang, name), []):
                    worst = max(worst, jaccard(sh, other))
                    if best is not None and worst >= best[0]:
                        break  # already worse than the best attempt so far
                if best is None or worst < best[0]:
                    best = (worst, name, ctx, title, paras, sh)
                if worst < MAX_BASE_JACCARD:
                    break
            assert best is not None
            _, name, ctx, title, paras, sh = best
            by_topic.setdefault((lang, name), []).append(sh)
            counters[lang] += 1
            art = Article(
                f"{lang}-{counters[lang]:04d}",
                lang,
                name,
                title,
                paras,
                slug_url(rng, lang, ctx["domain"], title, when),
                ctx,
                when,
            )
            art.root = art.id
            per_story[art.id] = 1
            if rng.random() < 0.15:
                art.clean, art.paragraphs = paras, add_typos(rng, lang, paras)
            stream.append(art)
            continue
        kind = rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
        pool = [
            a for a in (stream[-40:] if rng.random() < 0.7 else stream) if per_story[a.root] < 4
        ]  # at most 3 copies per story
        typod = [a for a in stream if a.clean is not None and a.root not in corrected]
        if kind == "correction" and typod:
            parent = rng.choice(typod)
            corrected.add(parent.root)
        else:
            kind = "edit" if kind == "correction" else kind
            parent = rng.choice(
                [a for a in pool if a.kind == "base"] if rng.random() < 0.8 else pool
            )
        per_story[parent.root] += 1
        title, paras, same_url = mutate(rng, parent, kind)
        counters[parent.lang] += 1
        domain = rng.choice(T.EN_OUTLETS if parent.lang == "en" else T.ZH_OUTLETS)[1]
        url = parent.url if same_url else slug_url(rng, parent.lang, domain, title, when)
        stream.append(
            replace(
                parent,
                id=f"{parent.lang}-{counters[parent.lang]:04d}",
                title=title,
                paragraphs=paras,
                url=url,
                clean=None,
                kind=kind,
                when=when,
            )
        )
    return stream


def build(seed: int = SEED) -> list[str]:
    """The sample as JSONL lines (no newlines), stream order, malformed records included."""
    lines = [
        json.dumps(
            {
                "id": a.id,
                "title": a.title,
                "url": a.url,
                "lang": a.lang,
                "timestamp": a.when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "text": a.text,
            },
            ensure_ascii=False,
        )
        for a in generate(seed)
    ]
    return with_malformed(lines)


def with_malformed(lines: list[str]) -> list[str]:
    """Insert the two deliberately broken records at 1/3 and 2/3 of the stream."""
    cut = json.dumps(
        {
            "id": "en-9001",
            "title": "Storm knocks out power across the region",
            "lang": "en",
            "text": "A powerful storm swept across the region overnight",
        }
    )
    truncated = cut[: cut.index("overnight")]  # a record cut off mid-write: invalid JSON
    wrong_field = json.dumps(
        {
            "id": "zh-9002",
            "title": "爬虫字段错误示例",
            "lang": "zh",
            "body": "正文被写进了 body 字段，缺少必需的 text 字段。",
        },
        ensure_ascii=False,
    )  # valid JSON, but no "text": missing_text
    out = list(lines)
    out.insert(len(out) * 2 // 3, wrong_field)
    out.insert(len(out) // 3, truncated)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if sample.jsonl is out of date")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    content = "\n".join(build()) + "\n"
    if args.check:
        ok = args.out.exists() and args.out.read_text(encoding="utf-8") == content
        print(f"{args.out}: {'up to date' if ok else 'STALE (re-run make_sample.py)'}")
        return 0 if ok else 1
    args.out.write_text(content, encoding="utf-8")
    print(f"wrote {args.out}: {content.count(chr(10))} lines, {len(content.encode()):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
