"""Never answers: sleeps far past any timeout."""

import time

time.sleep(120)
