"""Engines: self-contained machinery the kernel and the apps call (each its own package
with a README). An engine imports only Django, the standard library and third-party
libraries — never an app, never ``loopx_site.core``."""
