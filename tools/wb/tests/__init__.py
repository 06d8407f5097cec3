# The screens these tests read are the English ones, whatever the machine's locale and progress
# file say (test_i18n switches to Chinese where it tests Chinese).
from wb.i18n import use_language

use_language("en")
