"""Server-rendered inline SVG charts, each with a <title>, a <desc> and a data table beside it.

Colours come from CSS classes (c-pos, c-bar, ...) whose values follow the colour scheme, and
text is drawn in currentColor, so one SVG reads in light and dark. The charts hold no style
attribute (the CSP allows the stylesheet only). Every chart is 320 units wide with 13-unit text: about
12 px at 375 px wide, and CSS caps the width on large screens.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from markupsafe import Markup, escape

from ..analysis.english import month_name, plural
from ..analysis.thresholds import MIN_COUNT, trend_is_said

WIDTH = 320


def _svg(chart_id: str, height: float, title: str, desc: str, body: list[str]) -> Markup:
    return Markup(
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height:g}" role="img" '
        f'aria-labelledby="{chart_id}-title {chart_id}-desc" font-size="13">'
        f'<title id="{chart_id}-title">{escape(title)}</title>'
        f'<desc id="{chart_id}-desc">{escape(desc)}</desc>' + "".join(body) + "</svg>"
    )


def _table(caption: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> Markup:
    """The chart's figures as a table, folded away in a <details> below it."""
    head = "".join(
        f'<th scope="col"{" class=num" if i else ""}>{escape(h)}</th>' for i, h in enumerate(headers)
    )
    body = "".join(
        f'<tr><th scope="row">{escape(row[0])}</th>'
        + "".join(f'<td class="num">{escape(cell)}</td>' for cell in row[1:])
        + "</tr>"
        for row in rows
    )
    return Markup(
        f'<details><summary>{escape(caption)} as a table</summary><div class="scroll"><table>'
        f"<caption>{escape(caption)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div></details>"
    )


def _figure(svg: Markup, table: Markup) -> Markup:
    return Markup(f"<figure>{svg}{table}</figure>")


def _pct(part: int, whole: int) -> str:
    return f"{round(100 * part / whole)}%" if whole else "0%"


def rating_distribution(aggregate: Mapping[str, Any]) -> Markup:
    """Horizontal bars: how many reviews gave each star rating, 5 down to 1."""
    counts = {stars: aggregate["distribution"][str(stars)] for stars in range(5, 0, -1)}
    total = aggregate["review_count"]
    biggest = max(counts.values()) or 1
    row, left, span = 26, 56, 180  # labels left of the bars, counts right of them
    body = []
    for i, (stars, n) in enumerate(counts.items()):
        y = i * row
        body.append(
            f'<text x="0" y="{y + 15}">{plural(stars, "star")}</text>'
            f'<rect class="c-track" x="{left}" y="{y + 4}" width="{span}" height="14" rx="3"/>'
            f'<rect class="c-bar" x="{left}" y="{y + 4}" width="{span * n / biggest:.1f}" '
            'height="14" rx="3"/>'
            f'<text x="{left + span + 8}" y="{y + 15}">{n} ({_pct(n, total)})</text>'
        )
    rated = ", ".join(f"{n} rated {stars}" for stars, n in counts.items())
    desc = f"{plural(total, 'review')}: {rated}."
    svg = _svg("chart-ratings", row * 5, "Reviews by star rating", desc, body)
    rows = [(plural(stars, "star"), n, _pct(n, total)) for stars, n in counts.items()]
    return _figure(svg, _table("Reviews by star rating", ("Rating", "Reviews", "Share"), rows))


def aspect_sentiment(aspects: Sequence[Mapping[str, Any]]) -> Markup:
    """One stacked bar per aspect: positive, neutral and negative mentions, most mentioned first."""
    ranked = sorted(aspects, key=lambda a: -a["mention_count"])
    row, legend = 38, 26
    body = [
        f'<rect class="{cls}" x="{x}" y="2" width="12" height="12" rx="2"/>'
        f'<text x="{x + 17}" y="12">{label}</text>'
        for cls, x, label in (("c-pos", 0, "Positive"), ("c-neu", 95, "Neutral"), ("c-neg", 185, "Negative"))
    ]
    for i, aspect in enumerate(ranked):
        y = legend + i * row
        total = aspect["mention_count"]
        # a share only from MIN_COUNT mentions, as the tables and summary: one complaint is no "0% positive"
        if not total:
            share = "not mentioned"
        elif total < MIN_COUNT:
            share = "–"
        else:
            share = f"{_pct(aspect['positive_count'], total)} positive"
        body.append(
            f'<text x="0" y="{y + 12}">{escape(aspect["label"])} ({total})</text>'
            f'<text x="{WIDTH}" y="{y + 12}" text-anchor="end">{share}</text>'
        )
        x = 0.0
        for cls, key in (
            ("c-pos", "positive_count"),
            ("c-neu", "neutral_count"),
            ("c-neg", "negative_count"),
        ):
            width = WIDTH * aspect[key] / total if total else 0
            if width:
                body.append(f'<rect class="{cls}" x="{x:.1f}" y="{y + 17}" width="{width:.1f}" height="12"/>')
            x += width
    desc = "; ".join(
        f"{a['label']}: {plural(a['mention_count'], 'mention')}, {a['positive_count']} positive, "
        f"{a['neutral_count']} neutral, {a['negative_count']} negative"
        for a in ranked
    )
    svg = _svg("chart-aspects", legend + row * len(ranked), "What reviews say about each aspect", desc, body)
    rows = [
        (a["label"], a["mention_count"], a["positive_count"], a["neutral_count"], a["negative_count"])
        for a in ranked
    ]
    return _figure(
        svg, _table("Sentiment by aspect", ("Aspect", "Mentions", "Positive", "Neutral", "Negative"), rows)
    )


def monthly_trend(temporal: Mapping[str, Any]) -> Markup:
    """Two panels over the same months: the average rating (a line, 1 to 5) and the reviews (bars)."""
    months = temporal["monthly"]
    if not months:
        return Markup('<p class="muted">No reviews yet.</p>')
    left, top, panel, gap = 24, 26, 90, 34
    step = (WIDTH - left) / len(months)
    biggest = max(m["review_count"] for m in months) or 1

    def rating_y(rating: float) -> float:
        return top + panel * (5 - rating) / 4

    volume_top = top + panel + gap
    body = []
    for stars in range(1, 6):
        y = rating_y(stars)
        body.append(
            f'<line class="c-grid" x1="{left}" x2="{WIDTH}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{stars}</text>'
        )
    body.append(
        f'<text x="{left}" y="12">Average rating</text>'
        f'<text x="{left}" y="{volume_top - 8}">Reviews per month (most: {biggest})</text>'
        f'<line class="c-grid" x1="{left}" x2="{WIDTH}" y1="{volume_top + panel}" y2="{volume_top + panel}"/>'
    )
    path, pen_down = [], False
    for i, month in enumerate(months):
        x = left + i * step
        if month["review_count"]:
            height = panel * month["review_count"] / biggest
            body.append(
                f'<rect class="c-vol" x="{x + 1:.1f}" y="{volume_top + panel - height:.1f}" '
                f'width="{max(step - 2, 1):.1f}" height="{height:.1f}"/>'
            )
        if month["average_rating"] is None:
            pen_down = False  # a month without reviews breaks the line
        else:
            path.append(
                f"{'L' if pen_down else 'M'}{x + step / 2:.1f} {rating_y(month['average_rating']):.1f}"
            )
            pen_down = True
        if month["month"].endswith("-01") or i == 0:
            body.append(f'<text x="{x:.1f}" y="{volume_top + panel + 16}">{month["month"][:4]}</text>')
    body.insert(0, f'<path class="c-line" d="{" ".join(path)}"/>')
    trend = temporal["trend"]
    first, last = month_name(months[0]["month"]), month_name(months[-1]["month"])
    desc = f"Average rating and number of reviews per month, {first} to {last}."
    if trend_is_said(temporal["monthly"], trend):  # not with [publish] trend = false, nor from too few months
        desc += f" Over the last {trend['window_months']} months the average rating is {trend['direction']}."
    svg = _svg("chart-trend", volume_top + panel + 22, "Average rating and reviews per month", desc, body)
    rows = [
        (
            month_name(m["month"]),
            m["review_count"],
            "–" if m["average_rating"] is None else f"{m['average_rating']:.2f}",
        )
        for m in months
    ]
    return _figure(svg, _table("Reviews per month", ("Month", "Reviews", "Average rating"), rows))
