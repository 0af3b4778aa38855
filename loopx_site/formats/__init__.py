"""Date formats of the operator pages (``FORMAT_MODULE_PATH``): ISO dates and 24-hour
times in UTC (``TIME_ZONE``), short enough that a list keeps its time columns in view
at 1280 px and unambiguous across operators' locales."""
