"""gunicorn's settings every way of serving shares (`make run`, `make cluster`, compose, the
Dockerfile): gunicorn reads ./gunicorn.conf.py from the folder it starts in. The command
lines give the workers, threads and timeout; what is here is what none of them should differ on.
"""

# Seconds an idle kept-alive connection stays open. gunicorn's default, 2 s, is shorter than
# the pause between two pages: a browser or a proxy sending its next request on a connection
# the server is closing at that moment gets it reset (bench/load.py's failures). gthread
# workers hold idle connections in their poller, not in a thread, so a longer wait costs no
# worker. Longer than a proxy's own idle timeout (nginx's 60 s upstream default), so that the
# proxy, not gunicorn, closes first.
keepalive = 75

# Load the application in the master, before the workers are forked: its warm-up
# (sessionviewer/wsgi.py: the templates compiled, genai-prices' tables) runs once a server,
# not in each worker at its first requests, and the workers share those pages of memory.
# It opens no database connection, so no worker inherits one.
preload_app = True
