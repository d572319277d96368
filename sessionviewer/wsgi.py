import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sessionviewer.settings")

application = get_wsgi_application()

# What is loaded by now (Django, the apps, their modules) lives as long as the worker: out of
# the collector's way, a full collection walks only what requests made. A page that parses a
# long session's snapshot (1.3 MB of JSON at 2 GB) otherwise paid about 40 ms for every
# other full collection walking Django's own objects (bench/README, Size benchmark).
gc.freeze()
