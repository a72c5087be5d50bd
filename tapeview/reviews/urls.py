"""URLs of the reviews app: the review list, each entry's review history, and the review queues."""

from django.urls import path

from . import queue_views, views

app_name = "reviews"

urlpatterns = [
    path("reviews/", views.review_list, name="review_list"),
    path("tapes/<str:key>/entries/<int:pos>/reviews", views.review_history, name="review_history"),
    path("tapes/<str:key>/entries/<int:pos>/reviews/new", views.review_create, name="review_create"),
    path("reviews/queues/", queue_views.queue_list, name="queue_list"),
    path("reviews/queues/new", queue_views.queue_create, name="queue_create"),
    path("reviews/queues/send", queue_views.queue_send, name="queue_send"),
    path("reviews/queues/<int:queue_id>/", queue_views.queue_detail, name="queue_detail"),
    path("reviews/queues/<int:queue_id>/delete", queue_views.queue_delete, name="queue_delete"),
    path("reviews/queues/<int:queue_id>/assign", queue_views.queue_assign, name="queue_assign"),
    path("reviews/queues/<int:queue_id>/items/<int:item_id>/", queue_views.item_detail, name="item_detail"),
    path(
        "reviews/queues/<int:queue_id>/items/<int:item_id>/review",
        queue_views.item_review,
        name="item_review",
    ),
    path(
        "reviews/queues/<int:queue_id>/items/<int:item_id>/remove",
        queue_views.item_remove,
        name="item_remove",
    ),
]
