"""The command line: one sub-command per verb."""

import argparse
import signal
import sys

import wb
from .bench import cmd_bench
from .common import ROOT, WorkbookError
from .contract import cmd_contract
from .messages import cmd_messages
from .tables import cmd_tables
from .handout import cmd_handout, cmd_leaks
from .classreport import cmd_grade
from .instructor import cmd_guides, cmd_mutants, cmd_verify_stubs
from .learner import (cmd_check, cmd_hint, cmd_lang, cmd_next, cmd_record, cmd_status,
                      cmd_use, cmd_watch)
from .quiz import cmd_quiz

class Parser(argparse.ArgumentParser):
    """Reports a bad argument in one line (and exit status 2) instead of the usage text."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def main(argv=None):
    parser = Parser(prog="workbook", description=wb.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    p = verbs.add_parser("use", help="select the student stub or the reference for a chapter",
                         description="Compiles CHAPTER (or all) from your stub or from the "
                         "reference from now on (WB_REFERENCE in the build's cache), then "
                         "rebuilds what depends on it: its library and checks, and the "
                         "programs already built that link it (a later chapter's checks, the "
                         "minigpt command). Nothing else is built.")
    p.add_argument("chapter", help="3, chapter3, capstone or all")
    p.add_argument("kind", choices=["student", "reference"])
    p.add_argument("--jobs", type=int, default=2, help="parallel compile jobs")
    p.add_argument("--build-dir", default=str(ROOT / "build" / "student"))
    p.set_defaults(func=cmd_use)

    p = verbs.add_parser("status", help="one line per chapter: stub or reference, checks passed")
    p.add_argument("--build-dir", default=str(ROOT / "build" / "student"))
    p.set_defaults(func=cmd_status)

    p = verbs.add_parser("check", help="build and run one chapter's checks (results kept for "
                         "status and hint)")
    p.add_argument("chapter", help="3, chapter3, capstone or all")
    p.add_argument("--verbose", action="store_true", help="every failing check and assertion "
                   "in full (and the whole build log when it does not compile)")
    p.add_argument("--jobs", type=int, default=2, help="parallel compile jobs")
    p.add_argument("--build-dir", default=str(ROOT / "build" / "student"))
    p.set_defaults(func=cmd_check)

    p = verbs.add_parser("watch", help="check a chapter again on every save; move on when it "
                         "passes", description="Builds and checks CHAPTER (default: your first "
                         "chapter not yet passing) each time one of its files is saved, shows "
                         "the one screen of `check`, and moves to the next chapter when it "
                         "passes. Ctrl-C stops.")
    p.add_argument("chapter", nargs="?", help="3, chapter3 or capstone")
    p.add_argument("--jobs", type=int, default=2, help="parallel compile jobs")
    p.add_argument("--build-dir", default=str(ROOT / "build" / "student"))
    p.set_defaults(func=cmd_watch)

    p = verbs.add_parser("record", help="keep a chapter's results in the progress file (the "
                         "last step of `ctest -L chapterN`)")
    p.add_argument("chapter", help="3, chapter3 or capstone")
    p.add_argument("--build-dir", default=str(ROOT / "build" / "student"))
    p.set_defaults(func=cmd_record)

    p = verbs.add_parser("next", help="your current chapter: its guide, files and first task")
    p.add_argument("--build-dir", default=str(ROOT / "build" / "student"))
    p.set_defaults(func=cmd_next)

    p = verbs.add_parser("hint", help="show the first failing check of a chapter and its next hint",
                         description="Shows the first failing check of CHAPTER (from the last "
                         "`check`, or runs the checks) and the next hint from the chapter's guide, "
                         "one more each time; N shows hint N.")
    p.add_argument("chapter", help="3, chapter3 or capstone")
    p.add_argument("n", nargs="?", type=int, help="show hint number N (1 = the first)")
    p.add_argument("--rerun", action="store_true", help="run the checks even if results exist")
    p.add_argument("--build-dir", default=str(ROOT / "build" / "student"))
    p.set_defaults(func=cmd_hint)

    p = verbs.add_parser("lang", help="the language of the screens: zh (中文) or en",
                         description="Keeps the language of check, hint, next, status and watch "
                         "in the progress file. Until one is kept, a Chinese locale (LANG=zh_CN."
                         "UTF-8, ...) means Chinese and any other English. Without an argument, "
                         "says which language is used and why.")
    p.add_argument("language", nargs="?", choices=["zh", "en"])
    p.set_defaults(func=cmd_lang)

    p = verbs.add_parser("quiz", help="answer a chapter's numeric questions (predictions and "
                         "\"Before you code\")",
                         description="Asks the numeric questions of CHAPTER's guide one by one "
                         "(the predictions in the text, then \"Before you code\") and checks each "
                         "answer to the precision the question states; a wrong answer gets a "
                         "second try, and an answer rounded to fewer digits is asked again. The "
                         "answers are folded in the guide. Language: --lang, else the progress "
                         "file's (workbook lang), else LANG=zh* chooses Chinese. Exit status 0 "
                         "when all are right.")
    p.add_argument("chapter", help="3, chapter3, capstone, or experiments (docs/experiments.md)")
    p.add_argument("--only", nargs="*", metavar="ID", help="ask only these questions: 3 or Q3 "
                   "(\"Before you code\"), P2 (a prediction in the text)")
    p.add_argument("--list", action="store_true", help="list the questions and stop")
    p.add_argument("--lang", choices=["en", "zh"], help="the language of the questions and "
                   "the screens")
    p.add_argument("--zh", action="store_true", help="the same as --lang zh")
    p.set_defaults(func=cmd_quiz)

    p = verbs.add_parser("grade", help="build a student's tree, run every check, report",
                         description="Builds a student's tree (a copy of the repository or its "
                         "chapters/ folder) in its own build directory, runs every check and "
                         "prints each chapter's result and a score. Exit status: 0 when every "
                         "check passes, 1 when some fail, 2 on a usage or build-system error.")
    p.add_argument("--tree", default=str(ROOT), help="the student's repository or chapters/ "
                   "folder (default: this repository)")
    p.add_argument("--only", nargs="*", help="grade these chapters; the others come from the "
                   "reference (default: all)")
    p.add_argument("--junit", metavar="FILE", help="also write the report as JUnit XML")
    p.add_argument("--markdown", metavar="FILE", help="also write the report as Markdown (both "
                   "may be given: one run writes both)")
    p.add_argument("--verbose", action="store_true", help="list passing checks too")
    p.add_argument("--lines", type=int, default=4, help="failure lines shown per check")
    p.add_argument("--timeout", type=int, default=300, help="seconds allowed per check")
    p.add_argument("--jobs", type=int, default=2, help="parallel compile and test jobs")
    p.add_argument("--extra-tests", metavar="DIR", help="the instructor's own Catch2 checks, "
                   "kept outside the tree: DIR/<chapter folder>/*.cpp (e.g. DIR/6-masks/), "
                   "added to that chapter's checks; reports show their names and messages only")
    p.add_argument("--class", dest="class_dir", metavar="DIR", help="grade every student tree "
                   "in DIR (a folder each), one build folder each below --build-dir (default "
                   "build/class), and sum the class up (--markdown, --csv)")
    p.add_argument("--csv", metavar="FILE", help="with --class: the class summary as CSV")
    p.add_argument("--reports", metavar="DIR", help="with --class: each tree's Markdown report "
                   "in DIR/<tree>.md")
    p.add_argument("--build-dir", help="default build/grade (build/class with --class)")
    p.set_defaults(func=cmd_grade)

    p = verbs.add_parser("handout", help="write a class handout: no solution sources, the "
                         "reference prebuilt", description="Writes DIR: this repository's files "
                         "without solutions/ (nor the mistake catalogue and CI), with each "
                         "chapter's reference compiled into static libraries in prebuilt/, so "
                         "`use N reference`, WB_REFERENCE, the benchmarks and verify-stubs "
                         "still work there. Then proves that no reference function body can "
                         "be read in DIR. Exit status 1 when one can.")
    p.add_argument("dir", help="the handout's folder (new, empty, or an earlier handout)")
    p.add_argument("--reuse", nargs="*", metavar="BUILD", help="Release builds of this "
                   "repository whose libraries to take when up to date (e.g. build/solutions "
                   "build/bench); the rest is built in --build-dir")
    p.add_argument("--check", action="store_true", help="only check an existing handout DIR "
                   "for reference sources")
    p.add_argument("--jobs", type=int, default=2, help="parallel compile jobs")
    p.add_argument("--build-dir", default=str(ROOT / "build" / "handout"))
    p.set_defaults(func=lambda args: (cmd_leaks if args.check else cmd_handout)(args))

    p = verbs.add_parser("bench", help="time your kernels against the reference",
                         description="Builds bench_workbook and train_step, runs the benchmarks "
                         "of TARGET (a chapter, `kernel` for the capstone kernel, or all) and "
                         "prints your time, the reference's and their ratio (the median of "
                         "--repetitions runs). With --svg it also builds svg_chart, the workbook's "
                         "one chart writer (workbook/svg.hpp), and draws the scaling chart. Exit "
                         "status 1 when a benchmark of yours stops with an error (a stub, a "
                         "wrong result).")
    p.add_argument("target", nargs="?", help="3, chapter3, capstone, kernel or all (default)")
    p.add_argument("--filter", help="a --benchmark_filter regex instead of TARGET")
    p.add_argument("--min-time", help="--benchmark_min_time, e.g. 0.05")
    p.add_argument("--repetitions", type=int, default=3, help="runs of each benchmark; the "
                   "table shows their median and spread (default 3)")
    p.add_argument("--json", metavar="FILE", help="keep Google Benchmark's JSON output")
    p.add_argument("--svg", metavar="FILE", help="write the scaling chart (GFLOP/s against T "
                   "or threads)")
    p.add_argument("--from-json", metavar="FILE", help="read a saved JSON instead of running")
    p.add_argument("--build-dir", default=str(ROOT / "build" / "bench"))
    p.set_defaults(func=cmd_bench)

    p = verbs.add_parser("verify-stubs",
                         help="prove each chapter's checks fail on its stub and pass on the reference")
    p.add_argument("--only", nargs="*", help="chapters to verify (default: all)")
    p.add_argument("--build-dir", default=str(ROOT / "build" / "verify-stubs"))
    p.set_defaults(func=cmd_verify_stubs)

    p = verbs.add_parser("mutants", help="prove each catalogued mistake is caught")
    p.add_argument("--only", nargs="*", help="chapters to test (default: all)")
    p.add_argument("--list", action="store_true", help="list the catalogue and stop")
    p.add_argument("--signatures", metavar="FILE", help="also write the checks each mutant "
                   "fails (tools/mutants/signatures.json lets `check` name a known mistake)")
    p.add_argument("--blame", action="store_true", help="also say, for each caught mutant, "
                   "whether the `your code:` line of `check` names the function it changed, "
                   "and how often in all")
    p.add_argument("--from-signatures", action="store_true", help="with --blame: compile "
                   "nothing, take each mutant's failing checks from tools/mutants/signatures.json "
                   "(the whole catalogue in seconds)")
    p.add_argument("--sample", type=int, metavar="N", help="only N mutants of each chapter, "
                   "drawn with --seed (default: every mutant)")
    p.add_argument("--seed", type=int, default=1, help="the seed of --sample (default 1)")
    p.add_argument("--build-dir", default=str(ROOT / "build" / "mutants"))
    p.set_defaults(func=cmd_mutants)

    p = verbs.add_parser("guides", help="check that each guide's Chinese edition has its structure")
    p.add_argument("--require-all", action="store_true", help="a missing README.zh.md is an error")
    p.set_defaults(func=cmd_guides)

    p = verbs.add_parser("tables", help="check the chapter tables of README.md and README.zh.md "
                         "against the build's chapters (course.json)")
    p.add_argument("--build-dir", default=str(ROOT / "build" / "solutions"))
    p.set_defaults(func=cmd_tables)

    p = verbs.add_parser("contract", help="every clause of the headers and the checks that "
                         "prove it", description="Lists, per chapter, every clause of its "
                         "headers (a promise ending in `<!-- clause: <function>.<name> -->`) "
                         "with its sentence and the checks (TEST_CASEs tagged [c:<id>]) that "
                         "prove it. --check: exit status 1 when a clause has no check, a "
                         "[c:...] tag names no clause, or an id is used twice. Reads the files "
                         "only: no build needed.")
    p.add_argument("--chapters", "--only", dest="chapters", nargs="*", metavar="CHAPTER",
                   help="report on these chapters (3, chapter3, capstone; default: all)")
    p.add_argument("--check", action="store_true", help="exit status 1 on a clause without a "
                   "check, a tag naming no clause or a duplicate id (each named)")
    p.add_argument("--json", action="store_true", help="the clauses and every check's tags as "
                   "JSON (a check's \"functions\" are its clause ids' function parts)")
    p.add_argument("--extra-tests", metavar="DIR", help="also read DIR/<chapter folder>/*.cpp "
                   "(an instructor's extra checks, as for grade)")
    p.set_defaults(func=cmd_contract)

    p = verbs.add_parser("messages", help="every fact a check requires of an exception message "
                         "is one its function's @throws states", description="Finds each "
                         "requirement a check puts on an exception message (WB_CHECK_THROWS's "
                         "facts, *_THROWS_WITH matchers), maps it to the function called and "
                         "flags every word, number or shape the function's @throws text does "
                         "not state (the function's name and the call's offending values are "
                         "allowed). It also flags a message read any other way, and a "
                         "catalogued mistake whose \"likely mistake\" banner would show for "
                         "failures of message wording alone. --check: exit status 1 when "
                         "anything is flagged.")
    p.add_argument("--chapters", "--only", dest="chapters", nargs="*", metavar="CHAPTER",
                   help="these chapters' checks only (default: all)")
    p.add_argument("--check", action="store_true", help="exit status 1 when anything is flagged")
    p.add_argument("--json", action="store_true", help="the requirements and findings as JSON")
    p.add_argument("--all", action="store_true", help="also list the requirements that pass")
    p.add_argument("--extra-tests", metavar="DIR", help="also read DIR/<chapter folder>/*.cpp")
    p.set_defaults(func=cmd_messages)

    # `workbook hint 1 | head` ends quietly when head has read enough.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except WorkbookError as error:
        print(f"workbook {args.verb}: {error}", file=sys.stderr)
        return 2


