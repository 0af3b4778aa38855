from preferences import admin_recall  # noqa: F401 - registers the recall hook's admin
