"""The workbook tool: follow your progress, get hints, switch chapters, grade, benchmark.

Learners:
  workbook status                          one line per chapter: stub or reference, checks passed
  workbook check CHAPTER                   build what CHAPTER needs, run its checks: one screen
  workbook watch [CHAPTER]                 check again on every save, move on when it passes
  workbook next                            your current chapter: its guide and first task
  workbook hint CHAPTER [N]                the first failing check, and the next hint (or hint N)
  workbook use CHAPTER student|reference   flip one chapter (or `all`) and rebuild
  workbook bench [CHAPTER|kernel]          time your kernels against the reference
  workbook lang [zh|en]                    the language of the screens (default: the locale's)

Instructors:
  workbook grade --tree DIR                build a student's tree, run every check, report
  workbook verify-stubs                    every check fails on its stub, passes on the reference
  workbook mutants                         every catalogued mistake is caught by its chapter
  workbook guides                          English and Chinese guides share one structure
  workbook contract [--check]              every header clause and the checks that prove it
  workbook messages [--check]              checks ask of a message only what its @throws states

CHAPTER is a number (3), a label (chapter3), `capstone` or `all`. Run `workbook VERB --help`.
Only the Python standard library is used.
"""
