from django.urls import path

from writeback import api

urlpatterns = [
    path("writebacks", api.WriteBackListApi.as_view(), name="writebacks"),
    path("writebacks/<int:writeback_id>/approve", api.WriteBackApproveApi.as_view(), name="writeback-approve"),
    path("writebacks/<int:writeback_id>/reject", api.WriteBackRejectApi.as_view(), name="writeback-reject"),
]
