"""Each example's scorecard in a folder judged against its expected.json entry, as `hwcheck validate` judges it.

What it is for: the GPU scripts (bench/cuda_recheck.sh, bench/cuda_fallback.sh) grade the examples in a batch
and read this verdict. What it is not: a test (it prints; read its log).

Usage: python bench/judge_cards.py CARDS_DIR ASSIGNMENT
"""
import json
import os
import sys

from checker.platforms.validate import judge_example


def main(cards, aid):
    expected = json.load(open(f"assignments/{aid}/examples/expected.json"))
    bad = 0
    for sid, exp in sorted(expected.items()):
        path = os.path.join(cards, sid + ".json")
        if not os.path.exists(path):
            print("  no scorecard:", sid); bad += 1; continue
        card = json.load(open(path))
        if "questions" not in card:
            print("  not graded:", sid, card.get("status"), card.get("message", "")[:200]); bad += 1; continue
        cuda = [t for q in card["questions"] for t in q["tests"] if t.get("device") == "cuda"]
        problems = judge_example(card, exp)
        bad += bool(problems)
        ran = sum(t["outcome"] != "skipped" for t in cuda)
        print(f"  {sid}: {card['score']}/{card['max_score']} cuda items run {ran}/{len(cuda)}", *problems[:3], sep="\n    " if problems else " ")
    print(f"{aid} in {cards}: {len(expected) - bad} of {len(expected)} examples as expected")
    return bad


if __name__ == "__main__":
    sys.exit(1 if main(sys.argv[1], sys.argv[2]) else 0)
