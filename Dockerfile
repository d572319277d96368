# Session Viewer: the same steps as `make run`, in the same order.
FROM python:3.11-slim

# The machine the indexer's roots belong to: not the host name, which in a container is its id
# and new on every deploy. Give each machine its own (-e SESSIONVIEWER_MACHINE=laptop).
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    SESSIONVIEWER_DATA=/app/data SESSIONVIEWER_DEMO=1 ALLOWED_HOSTS=localhost,127.0.0.1 \
    SESSIONVIEWER_MACHINE=sessionviewer

WORKDIR /app
RUN useradd --create-home --uid 1000 viewer

# install
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt

COPY . .
# static (collectstatic needs a key at build time only; the real one comes at run time), compile
RUN SECRET_KEY=build-only python manage.py collectstatic --noinput --verbosity 0 \
    && python -m compileall -q sessionviewer \
    && mkdir -p /app/data && chown -R viewer /app/data

USER viewer
VOLUME ["/app/data", "/sessions"]
EXPOSE 8000

# migrate, copy the demo data once (its memory with a history), index, then serve with gunicorn and
# the watcher beside it (gthread workers: their heartbeat goes on while a long export streams,
# which a sync worker's would not)
CMD ["sh", "-c", "python manage.py migrate --noinput && python manage.py demo && python manage.py index && (python manage.py index --watch > /app/data/watcher.log 2>&1 &) && exec gunicorn sessionviewer.wsgi --bind 0.0.0.0:8000 --workers 3 --worker-class gthread --threads 4 --timeout 300 --access-logfile -"]
