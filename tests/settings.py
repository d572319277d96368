"""Settings for the test suite: the real ones, with a throwaway secret key."""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret")

from sessionviewer.settings import *  # noqa: E402, F403

STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # noqa: S303 - fast test logins

# Login throttling is off for the suite: Django's test client logs in through authenticate()
# with no request, which django-axes refuses. tests/test_login_throttle.py turns it on.
AXES_ENABLED = False

# Tests never run collectstatic: serve the source folder as it is. The check against a
# STATIC_ROOT among STATICFILES_DIRS guards collectstatic: silenced for the commands that
# run on these settings (tests/test_cluster.py's migrate).
STATIC_ROOT = BASE_DIR / "static"  # noqa: F405
SILENCED_SYSTEM_CHECKS = ["staticfiles.E002"]
WHITENOISE_AUTOREFRESH = True

# A file, not an in-memory database: the live server's threads used by the browser
# tests then open connections of their own instead of sharing the test's.
if DATABASES["default"]["ENGINE"] == "sessionviewer.sqlite":  # noqa: F405
    import tempfile

    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": os.path.join(tempfile.gettempdir(), f"sessionviewer-test-{os.getpid()}.sqlite3")
    }
