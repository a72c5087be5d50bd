from django.db import migrations
from django.db.models import Q


def reread_usage_and_big_lines(apps, schema_editor):
    # A run's usage now counts only when it gives a sane count (sources.python_json.is_count: not
    # negative, not a string, not 10**30), and a Bub line too long to parse whole is read from a
    # compact head ({"id":1,"kind":...) too: a tape whose index may say otherwise (an unreadable
    # line, a token figure of 0 or below, a negative phase figure) is read again whole at its next
    # refresh: phase_count -1 makes an appended file's next read start over (tapes.index
    # _read_appended, as migration 0005 did), and a file rewritten wholesale is always read whole.
    Tape = apps.get_model("tapeview", "Tape")
    Anchor = apps.get_model("tapeview", "Anchor")
    negative = Anchor.objects.filter(
        Q(prompt_tokens__lt=0) | Q(completion_tokens__lt=0) | Q(cached_tokens__lt=0)
    ).values("tape")
    odd = (
        Q(kind="bub", unreadable__gt=0)
        | Q(tokens__lte=0)
        | Q(context_tokens__lte=0)
        | Q(last_prompt_tokens__lt=0)
        | Q(last_cached_tokens__lt=0)
        | Q(pk__in=negative)
    )
    Tape.objects.filter(odd, kind__in=("bub", "nanobot")).update(indexed_at=None, phase_count=-1)


class Migration(migrations.Migration):
    dependencies = [
        ("tapeview", "0019_tape_first_message"),
    ]

    operations = [
        migrations.RunPython(reread_usage_and_big_lines, migrations.RunPython.noop),
    ]
