from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from sessionviewer import prices
from sessionviewer.index.statements import update_sessions
from sessionviewer.models import Session

BATCH = 1000
FIELDS = ("cost", "unpriced_tokens", "model_costs")


class Command(BaseCommand):
    help = "Price every session's tokens again: after prices.toml or genai-prices changed."

    def handle(self, *args, **options):
        prices.clear_cache()
        changed = 0
        sessions = Session.objects.only(
            "id", "usage_lines", "cost", "unpriced_tokens", "model_costs"
        ).order_by("id")
        try:
            with transaction.atomic():
                batch = []
                for session in sessions.iterator(chunk_size=BATCH):
                    before = (session.cost, session.unpriced_tokens, session.model_costs)
                    session.apply_prices()
                    if (session.cost, session.unpriced_tokens, session.model_costs) != before:
                        batch.append(session)
                    if len(batch) >= BATCH:
                        update_sessions(batch, FIELDS)
                        changed, batch = changed + len(batch), []
                update_sessions(batch, FIELDS)
                changed += len(batch)
        except prices.PricesFileError as error:
            raise CommandError(str(error)) from None
        prices.keep_rates()
        return f"{changed} session{'s' if changed != 1 else ''} priced again ({prices.library_version()})"
